// DiskTier over a temporary directory: round trip (O_DIRECT and buffered), capacity and LRU,
// restart keeping blocks and their order, a full file system (injected ENOSPC), leftovers,
// damaged files, and Open's errors.
#include "tier/disk_tier.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include <gtest/gtest.h>

#include "tier/block_record.h"
#include "tier/redis_test_server.h"

namespace kvengine {
namespace {

using tier_test::TempDir;
namespace fs = std::filesystem;

TierKey DiskKey(int i) { return TierKey{BlockHash{Sha256Of("block " + std::to_string(i))}, 0}; }

// A record of `payload` random bytes for key i.
std::vector<uint8_t> DiskRecord(int i, size_t payload) {
  std::mt19937 rng(uint32_t(i) * 31 + uint32_t(payload));
  std::vector<uint8_t> bytes(payload);
  for (uint8_t& b : bytes) b = uint8_t(rng());
  RecordMeta meta;
  meta.namespace_digest = Sha256Of("ns");
  meta.hash = DiskKey(i).hash;
  meta.payload_bytes = payload;
  return EncodeRecord(meta, bytes);
}

std::unique_ptr<DiskTier> OpenTier(const std::string& dir, uint64_t capacity, bool direct = true) {
  Result<std::unique_ptr<DiskTier>> t =
      DiskTier::Open({.dir = dir, .capacity_bytes = capacity, .use_o_direct = direct});
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

std::optional<std::vector<uint8_t>> GetOne(DiskTier& t, const TierKey& k) {
  std::vector<std::optional<std::vector<uint8_t>>> out;
  t.GetMany(std::span<const TierKey>(&k, 1), &out);
  return out.at(0);
}

std::string FilePath(const TempDir& d, int i) {
  return d.path() + "/" + DiskKey(i).Name() + ".kvb";
}

class DiskTierTest : public ::testing::TestWithParam<bool> {};  // O_DIRECT reads on/off.

TEST_P(DiskTierTest, RoundTripKeepsEveryByte) {
  TempDir dir;
  auto t = OpenTier(dir.path(), 1 << 24, GetParam());
  ASSERT_TRUE(t);
  const std::vector<size_t> sizes = {0, 1, 4000, 4096 - kRecordHeaderBytes, 1 << 20};
  for (size_t i = 0; i < sizes.size(); ++i)
    ASSERT_TRUE(t->Put(DiskKey(int(i)), DiskRecord(int(i), sizes[i])).ok());
  std::vector<TierKey> keys = {DiskKey(3), DiskKey(99), DiskKey(0),
                               DiskKey(4), DiskKey(1),  DiskKey(2)};
  std::vector<std::optional<std::vector<uint8_t>>> out;
  t->GetMany(keys, &out);
  ASSERT_EQ(out.size(), keys.size());
  EXPECT_EQ(out[0], DiskRecord(3, sizes[3]));
  EXPECT_FALSE(out[1].has_value());
  EXPECT_EQ(out[2], DiskRecord(0, sizes[0]));
  EXPECT_EQ(out[3], DiskRecord(4, sizes[4]));
  EXPECT_EQ(out[4], DiskRecord(1, sizes[1]));
  EXPECT_EQ(out[5], DiskRecord(2, sizes[2]));
  BlockStoreStats s = t->Stats();
  EXPECT_EQ(s.blocks, 5u);
  EXPECT_EQ(s.hits, 5u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.bytes, s.bytes_written);
  EXPECT_EQ(s.bytes_read, s.bytes_written);
  EXPECT_EQ(s.errors + s.corrupt, 0u);
  EXPECT_TRUE(fs::exists(FilePath(dir, 4)));
  if (!GetParam()) {
    EXPECT_FALSE(t->direct_reads());
  } else if (!t->direct_reads()) {
    std::cout << "note: " << dir.path() << " refuses O_DIRECT; reads fell back to buffered\n";
  }
  // Overwriting with another size keeps the accounting exact.
  ASSERT_TRUE(t->Put(DiskKey(4), DiskRecord(4, 10)).ok());
  EXPECT_EQ(GetOne(*t, DiskKey(4)), DiskRecord(4, 10));
  EXPECT_EQ(t->Stats().bytes, fs::file_size(FilePath(dir, 4)) + 4 * kRecordHeaderBytes + 4000 + 1 +
                                  (4096 - kRecordHeaderBytes));
  t->Erase(DiskKey(4));
  EXPECT_FALSE(GetOne(*t, DiskKey(4)).has_value());
  EXPECT_FALSE(fs::exists(FilePath(dir, 4)));
}

INSTANTIATE_TEST_SUITE_P(Reads, DiskTierTest, ::testing::Values(true, false),
                         [](const auto& p) { return p.param ? "Direct" : "Buffered"; });

TEST(DiskTierLruTest, CapacityEvictsLeastRecentlyUsed) {
  TempDir dir;
  const uint64_t rec = DiskRecord(0, 1000).size();
  auto t = OpenTier(dir.path(), 3 * rec);
  ASSERT_TRUE(t);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(t->Put(DiskKey(i), DiskRecord(i, 1000)).ok());
  ASSERT_TRUE(GetOne(*t, DiskKey(0)).has_value());
  ASSERT_TRUE(t->Put(DiskKey(3), DiskRecord(3, 1000)).ok());  // Evicts 1, the least recent.
  EXPECT_EQ(t->KeysLruFirst(), (std::vector<TierKey>{DiskKey(2), DiskKey(0), DiskKey(3)}));
  EXPECT_FALSE(fs::exists(FilePath(dir, 1)));
  EXPECT_EQ(t->Stats().evictions, 1u);
  EXPECT_EQ(t->Stats().bytes, 3 * rec);
  Status too_big = t->Put(DiskKey(9), DiskRecord(9, 3 * rec));
  EXPECT_EQ(too_big.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(t->Stats().blocks, 3u);  // A refused Put evicts nothing.
}

// Bytes of block files in `dir` (what a file system would hold for the tier).
uint64_t BlockFileBytes(const std::string& dir) {
  uint64_t n = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    if (f.path().extension() == ".kvb") n += f.file_size();
  }
  return n;
}

TEST(DiskTierFullTest, FullFileSystemEvictsOldestAndKeepsWorking) {
  // A file system with room for 4 records under a tier sized for 10: the 5th write fails with
  // ENOSPC (injected), the tier evicts its oldest, retries, logs once, and every later write
  // succeeds by evicting first.
  TempDir dir;
  const uint64_t rec = DiskRecord(0, 1000).size();
  std::vector<std::string> lines;
  int injected = 0;
  DiskTierOptions o{.dir = dir.path(), .capacity_bytes = 10 * rec};
  o.inject_write_error = [&](uint64_t bytes) {
    const bool full = BlockFileBytes(dir.path()) + bytes > 4 * rec;
    injected += full;
    return full ? ENOSPC : 0;
  };
  o.log = [&](const std::string& line) { lines.push_back(line); };
  Result<std::unique_ptr<DiskTier>> opened = DiskTier::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  DiskTier& t = **opened;
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(t.Put(DiskKey(i), DiskRecord(i, 1000)).ok()) << "write " << i;
  }
  EXPECT_EQ(injected, 1);  // Only the first full write failed; later ones made room first.
  EXPECT_EQ(t.KeysLruFirst(),
            (std::vector<TierKey>{DiskKey(8), DiskKey(9), DiskKey(10), DiskKey(11)}));
  EXPECT_EQ(GetOne(t, DiskKey(11)), DiskRecord(11, 1000));
  EXPECT_FALSE(GetOne(t, DiskKey(0)).has_value());
  const BlockStoreStats s = t.Stats();
  EXPECT_EQ(s.errors, 0u);  // Every write landed.
  EXPECT_EQ(s.evictions, 8u);
  EXPECT_EQ(s.capacity_bytes, 4 * rec);  // The limit the file system allowed.
  EXPECT_EQ(s.bytes_written, 12 * rec);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("file system is full (No space left on device"), std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("evicted the 1 oldest blocks"), std::string::npos) << lines[0];
  EXPECT_EQ(BlockFileBytes(dir.path()), 4 * rec);
}

TEST(DiskTierFullTest, FullWithNothingToEvictFailsAndLogsOnce) {
  // The file system is full of someone else's files: nothing the tier can free. Writes fail
  // (counted), the tier keeps its limit and logs once, not once per write; when space comes
  // back, writes succeed again.
  TempDir dir;
  std::vector<std::string> lines;
  bool full = true;
  DiskTierOptions o{.dir = dir.path(), .capacity_bytes = 1 << 20};
  o.inject_write_error = [&](uint64_t) { return full ? EDQUOT : 0; };
  o.log = [&](const std::string& line) { lines.push_back(line); };
  Result<std::unique_ptr<DiskTier>> opened = DiskTier::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  DiskTier& t = **opened;
  for (int i = 0; i < 5; ++i) {
    const Status st = t.Put(DiskKey(i), DiskRecord(i, 100));
    EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  }
  EXPECT_EQ(t.Stats().errors, 5u);
  EXPECT_EQ(t.Stats().capacity_bytes, uint64_t{1} << 20);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("holds no block to evict"), std::string::npos) << lines[0];
  EXPECT_TRUE(fs::is_empty(dir.path()) || BlockFileBytes(dir.path()) == 0);
  full = false;
  ASSERT_TRUE(t.Put(DiskKey(9), DiskRecord(9, 100)).ok());
  EXPECT_EQ(GetOne(t, DiskKey(9)), DiskRecord(9, 100));
}

TEST(DiskTierLruTest, RestartKeepsBlocksInLruOrder) {
  TempDir dir;
  const uint64_t rec = DiskRecord(0, 500).size();
  {
    auto t = OpenTier(dir.path(), 10 * rec);
    ASSERT_TRUE(t);
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(t->Put(DiskKey(i), DiskRecord(i, 500)).ok());
    ASSERT_TRUE(GetOne(*t, DiskKey(1)).has_value());
    ASSERT_TRUE(GetOne(*t, DiskKey(0)).has_value());
    EXPECT_EQ(t->KeysLruFirst(),
              (std::vector<TierKey>{DiskKey(2), DiskKey(3), DiskKey(1), DiskKey(0)}));
    // While it is open, the directory is locked.
    Result<std::unique_ptr<DiskTier>> second =
        DiskTier::Open({.dir = dir.path(), .capacity_bytes = 1});
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.status().message().find("in use"), std::string::npos);
  }
  {
    auto t = OpenTier(dir.path(), 10 * rec);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->KeysLruFirst(),
              (std::vector<TierKey>{DiskKey(2), DiskKey(3), DiskKey(1), DiskKey(0)}));
    EXPECT_EQ(t->Stats().blocks, 4u);
    EXPECT_EQ(t->Stats().bytes, 4 * rec);
    EXPECT_EQ(GetOne(*t, DiskKey(3)), DiskRecord(3, 500));
  }
  // A smaller capacity at the next start evicts the least recent down to it.
  auto t = OpenTier(dir.path(), 2 * rec);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->KeysLruFirst(), (std::vector<TierKey>{DiskKey(0), DiskKey(3)}));
  EXPECT_FALSE(fs::exists(FilePath(dir, 2)));
  EXPECT_FALSE(fs::exists(FilePath(dir, 1)));
  EXPECT_EQ(t->Stats().evictions, 2u);
}

TEST(DiskTierFilesTest, LeftoversAndStrangersAtOpen) {
  TempDir dir;
  const std::string temp = dir.path() + "/" + DiskKey(5).Name() + ".kvb.tmp";
  const std::string stranger = dir.path() + "/README";
  const std::string bad_name = dir.path() + "/not-a-key.kvb";
  const std::string tiny = FilePath(dir, 6);
  for (const std::string& p : {temp, stranger, bad_name, tiny}) std::ofstream(p) << "partial";
  auto t = OpenTier(dir.path(), 1 << 20);
  ASSERT_TRUE(t);
  EXPECT_FALSE(fs::exists(temp));  // A write cut short before its rename.
  EXPECT_FALSE(fs::exists(tiny));  // Shorter than any record.
  EXPECT_TRUE(fs::exists(stranger));
  EXPECT_TRUE(fs::exists(bad_name));
  EXPECT_EQ(t->Stats().blocks, 0u);
  EXPECT_FALSE(GetOne(*t, DiskKey(5)).has_value());
}

TEST(DiskTierFilesTest, DamagedFilesAreMissesAndRemoved) {
  TempDir dir;
  auto t = OpenTier(dir.path(), 1 << 20);
  ASSERT_TRUE(t);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(t->Put(DiskKey(i), DiskRecord(i, 3000)).ok());
  // 0: truncated. 1: one payload bit flipped. 2: holds key 3's record. 3: removed behind our
  // back. 4: truncated and then reopened by a new DiskTier (the size matches the index then).
  ASSERT_EQ(::truncate(FilePath(dir, 0).c_str(), 2000), 0);
  {
    int fd = ::open(FilePath(dir, 1).c_str(), O_RDWR);
    uint8_t b;
    ASSERT_EQ(::pread(fd, &b, 1, 2500), 1);
    b ^= 0x10;
    ASSERT_EQ(::pwrite(fd, &b, 1, 2500), 1);
    ::close(fd);
  }
  fs::copy_file(FilePath(dir, 3), FilePath(dir, 2), fs::copy_options::overwrite_existing);
  fs::remove(FilePath(dir, 3));
  for (int i = 0; i < 4; ++i) {
    EXPECT_FALSE(GetOne(*t, DiskKey(i)).has_value()) << i;
    EXPECT_FALSE(fs::exists(FilePath(dir, i))) << i;
  }
  EXPECT_EQ(t->Stats().corrupt, 3u);
  EXPECT_EQ(t->Stats().misses, 4u);
  EXPECT_EQ(t->Stats().blocks, 1u);
  t.reset();
  ASSERT_EQ(::truncate(FilePath(dir, 4).c_str(), 1000), 0);
  t = OpenTier(dir.path(), 1 << 20);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Stats().blocks, 1u);
  EXPECT_FALSE(GetOne(*t, DiskKey(4)).has_value());
  EXPECT_FALSE(fs::exists(FilePath(dir, 4)));
  EXPECT_EQ(t->Stats().blocks, 0u);
}

TEST(DiskTierOpenTest, ClearErrors) {
  TempDir dir;
  auto fails_with = [](DiskTierOptions o, std::string_view text) {
    Result<std::unique_ptr<DiskTier>> t = DiskTier::Open(std::move(o));
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.status().message().find(text), std::string::npos) << t.status().ToString();
  };
  fails_with({.dir = "", .capacity_bytes = 1}, "empty directory");
  fails_with({.dir = dir.path(), .capacity_bytes = 0}, "capacity");
  std::ofstream(dir.path() + "/file") << "x";
  fails_with({.dir = dir.path() + "/file", .capacity_bytes = 1}, "file");
  fails_with({.dir = dir.path() + "/file/sub", .capacity_bytes = 1}, "cannot create");
  if (::geteuid() != 0) {  // root writes anywhere.
    fs::create_directory(dir.path() + "/ro");
    fs::permissions(dir.path() + "/ro", fs::perms::owner_read | fs::perms::owner_exec);
    fails_with({.dir = dir.path() + "/ro", .capacity_bytes = 1}, "not writable");
  }
  // A missing directory is created.
  auto t = OpenTier(dir.path() + "/a/b", 100);
  EXPECT_TRUE(t && fs::is_directory(dir.path() + "/a/b"));
}

}  // namespace
}  // namespace kvengine
