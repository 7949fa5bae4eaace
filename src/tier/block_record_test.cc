// The block record format: round trip, the fixed little-endian layout, and every RecordCheck
// outcome from generated damage (each truncation, each single bit flip, each foreign field).
#include "tier/block_record.h"

#include <cstring>
#include <limits>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "tier/tier_key.h"

namespace kvengine {
namespace {

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

RecordMeta TestMeta(uint64_t payload_bytes) {
  RecordMeta m;
  m.namespace_digest = Sha256Of("model-A|f16|bs16");
  m.hash.bytes = Sha256Of("block 7");
  m.group = 2;
  m.payload_format = kPayloadRawPool;
  m.payload_bytes = payload_bytes;
  return m;
}

TEST(BlockRecordTest, RoundTripKeepsEveryByte) {
  for (size_t n : {size_t(0), size_t(1), size_t(40), size_t(4096), size_t(100003)}) {
    std::vector<uint8_t> payload = RandomBytes(n, uint32_t(n) + 1);
    RecordMeta meta = TestMeta(n);
    std::vector<uint8_t> rec = EncodeRecord(meta, payload);
    ASSERT_EQ(rec.size(), kRecordHeaderBytes + n);
    std::span<const uint8_t> got;
    ASSERT_EQ(CheckRecord(rec, meta, &got), RecordCheck::kOk) << n;
    ASSERT_EQ(got.size(), n);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), payload.begin()));
    EXPECT_EQ(got.data(), rec.data() + kRecordHeaderBytes);  // A view, not a copy.
    RecordMeta parsed;
    ASSERT_EQ(CheckRecordIntegrity(rec, &parsed, nullptr), RecordCheck::kOk);
    EXPECT_EQ(parsed, meta);
  }
}

TEST(BlockRecordTest, FixedLittleEndianLayout) {
  RecordMeta meta = TestMeta(3);
  meta.group = 0x01020304;
  meta.payload_format = 0x0a0b0c0d;
  std::vector<uint8_t> rec = EncodeRecord(meta, std::vector<uint8_t>{7, 8, 9});
  EXPECT_EQ(std::memcmp(rec.data(), "KVTB", 4), 0);
  EXPECT_EQ((std::vector<uint8_t>(rec.begin() + 4, rec.begin() + 8)),
            (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(std::memcmp(rec.data() + 8, meta.namespace_digest.data(), 32), 0);
  EXPECT_EQ(std::memcmp(rec.data() + 40, meta.hash.bytes.data(), 32), 0);
  EXPECT_EQ((std::vector<uint8_t>(rec.begin() + 72, rec.begin() + 80)),
            (std::vector<uint8_t>{4, 3, 2, 1, 0x0d, 0x0c, 0x0b, 0x0a}));
  EXPECT_EQ((std::vector<uint8_t>(rec.begin() + 80, rec.begin() + 88)),
            (std::vector<uint8_t>{3, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ((std::vector<uint8_t>(rec.begin() + 96, rec.end())), (std::vector<uint8_t>{7, 8, 9}));
}

TEST(BlockRecordTest, EveryTruncationIsTruncated) {
  RecordMeta meta = TestMeta(40);
  std::vector<uint8_t> rec = EncodeRecord(meta, RandomBytes(40, 1));
  for (size_t len = 0; len < rec.size(); ++len) {
    std::span<const uint8_t> prefix(rec.data(), len);
    std::span<const uint8_t> payload;
    EXPECT_EQ(CheckRecord(prefix, meta, &payload), RecordCheck::kTruncated) << len;
    EXPECT_TRUE(payload.empty());
  }
}

TEST(BlockRecordTest, EverySingleBitFlipIsCaught) {
  RecordMeta meta = TestMeta(40);
  const std::vector<uint8_t> good = EncodeRecord(meta, RandomBytes(40, 2));
  for (size_t byte = 0; byte < good.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> rec = good;
      rec[byte] ^= uint8_t(1 << bit);
      RecordCheck got = CheckRecord(rec, meta, nullptr);
      RecordCheck want = RecordCheck::kCorrupt;  // Checksum mismatch.
      if (byte < 4) {
        want = RecordCheck::kBadMagic;
      } else if (byte < 8) {
        want = RecordCheck::kBadVersion;
      } else if (byte >= 80 && byte < 88) {
        // The length field: a larger length is a truncated record, a smaller one leaves
        // trailing bytes.
        uint64_t len;
        std::memcpy(&len, rec.data() + 80, 8);
        want = len > 40 ? RecordCheck::kTruncated : RecordCheck::kCorrupt;
      }
      EXPECT_EQ(got, want) << "byte " << byte << " bit " << bit;
    }
  }
}

TEST(BlockRecordTest, ForeignFieldsAreForeign) {
  const RecordMeta meta = TestMeta(16);
  const std::vector<uint8_t> rec = EncodeRecord(meta, RandomBytes(16, 3));
  std::vector<RecordMeta> others(5, meta);
  others[0].namespace_digest = Sha256Of("model-B|f16|bs16");
  others[1].group = 3;
  others[2].hash.bytes = Sha256Of("block 8");
  others[3].payload_format = 1;
  others[4].payload_bytes = 32;
  for (const RecordMeta& expected : others) {
    std::span<const uint8_t> payload;
    EXPECT_EQ(CheckRecord(rec, expected, &payload), RecordCheck::kForeign);
    EXPECT_TRUE(payload.empty());
  }
}

TEST(BlockRecordTest, TrailingBytesAndHostileLengths) {
  const RecordMeta meta = TestMeta(8);
  std::vector<uint8_t> rec = EncodeRecord(meta, RandomBytes(8, 4));
  std::vector<uint8_t> longer = rec;
  longer.push_back(0);
  EXPECT_EQ(CheckRecord(longer, meta, nullptr), RecordCheck::kCorrupt);
  // The largest lengths must be compared, never added (no overflow, no read past the end).
  for (uint64_t len :
       {std::numeric_limits<uint64_t>::max(),
        std::numeric_limits<uint64_t>::max() - kRecordHeaderBytes + 1, uint64_t(1) << 63}) {
    std::vector<uint8_t> hostile = rec;
    std::memcpy(hostile.data() + 80, &len, 8);
    EXPECT_EQ(CheckRecord(hostile, meta, nullptr), RecordCheck::kTruncated) << len;
  }
  std::vector<uint8_t> other_version = rec;
  other_version[4] = 2;
  EXPECT_EQ(CheckRecord(other_version, meta, nullptr), RecordCheck::kBadVersion);
  EXPECT_EQ(CheckRecord(std::vector<uint8_t>{'K', 'V', 'X'}, meta, nullptr),
            RecordCheck::kBadMagic);
  EXPECT_EQ(CheckRecord(std::vector<uint8_t>{'K', 'V'}, meta, nullptr), RecordCheck::kTruncated);
}

TEST(BlockRecordTest, EncodeIntoReusesTheBuffer) {
  std::vector<uint8_t> buf;
  buf.reserve(1024);
  const uint8_t* data = buf.data();
  std::vector<uint8_t> payload = RandomBytes(100, 5);
  EncodeRecordInto(TestMeta(100), payload, &buf);
  EXPECT_EQ(buf.data(), data);
  EXPECT_EQ(buf, EncodeRecord(TestMeta(100), payload));
}

TEST(BlockRecordTest, CheckNamesAreDistinct) {
  std::set<std::string_view> names;
  for (RecordCheck c : {RecordCheck::kOk, RecordCheck::kTruncated, RecordCheck::kBadMagic,
                        RecordCheck::kBadVersion, RecordCheck::kCorrupt, RecordCheck::kForeign}) {
    EXPECT_FALSE(RecordCheckName(c).empty());
    names.insert(RecordCheckName(c));
  }
  EXPECT_EQ(names.size(), 6u);
}

TEST(TierKeyTest, NameRoundTrips) {
  TierKey key{BlockHash{Sha256Of("x")}, 12};
  const std::string name = key.Name();
  EXPECT_EQ(name, "g12-v" + std::to_string(kRecordVersion) + "-f0-" + key.hash.Hex());
  std::optional<TierKey> back = ParseTierKeyName(name);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, key);
  EXPECT_EQ(TierKeyHasher()(*back), TierKeyHasher()(key));
  TierKey other_group = key;
  other_group.group = 0;
  EXPECT_FALSE(other_group == key);
  EXPECT_EQ(ParseTierKeyName(other_group.Name()), other_group);
}

TEST(TierKeyTest, TheRecordFormatIsPartOfTheKey) {
  // The same block stored raw and re-encoded (another --kv-tier-dtype) has two names, so two
  // engines sharing a store never overwrite each other's records.
  const TierKey raw{BlockHash{Sha256Of("x")}, 1, kPayloadRawPool};
  TierKey cold = raw;
  cold.format = 0x100 + 7;
  EXPECT_FALSE(raw == cold);
  EXPECT_NE(raw.Name(), cold.Name());
  EXPECT_NE(TierKeyHasher()(raw), TierKeyHasher()(cold));
  EXPECT_EQ(cold.Name(), "g1-v" + std::to_string(kRecordVersion) + "-f263-" + raw.hash.Hex());
  EXPECT_EQ(ParseTierKeyName(cold.Name()), cold);
  // Another record version is another build's record: not a name of ours.
  const std::string hex = raw.hash.Hex();
  EXPECT_FALSE(ParseTierKeyName("g1-v" + std::to_string(kRecordVersion + 1) + "-f0-" + hex));
  // The names of builds before the format was in the key.
  EXPECT_FALSE(ParseTierKeyName("g1-" + hex).has_value());
}

TEST(TierKeyTest, ParseRejectsOtherSpellings) {
  const std::string hex = BlockHash{Sha256Of("x")}.Hex();
  std::string upper = hex;
  for (char& c : upper) c = char(std::toupper(c));
  const std::string v = "-v" + std::to_string(kRecordVersion);
  for (const std::string& bad :
       {std::string(""), std::string("g"), "g-" + hex, "g01" + v + "-f0-" + hex,
        "gx" + v + "-f0-" + hex, "g1234567890" + v + "-f0-" + hex,
        "g1" + v + "-f0-" + hex.substr(1),
        "g1" + v + "-f0-" + hex + "0", "g1" + v + "-f0-" + upper, "h1" + v + "-f0-" + hex,
        "g1_" + hex, "g-1-" + hex, "g1" + v + "-f00-" + hex, "g1" + v + "-f-" + hex,
        "g1" + v + "-fx-" + hex, "g1" + v + "-f1234567890-" + hex, "g1-v-f0-" + hex,
        "g1-v01-f0-" + hex, "g1" + v + "-g0-" + hex, "g1" + v + "-f0" + hex,
        "g1-f0" + v + "-" + hex}) {
    EXPECT_FALSE(ParseTierKeyName(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace kvengine
