// DiskTier: the local-disk offload tier. One file per block in one directory, bounded by
// capacity_bytes (the sum of record sizes; the file system rounds each file up to its blocks),
// least recently used first out.
//
// Files: "<TierKey::Name()>.kvb" holds one encoded record (block_record.h). A write goes to
// "<name>.kvb.tmp" and is renamed over the final name, so a process crash never leaves a half
// file under a final name; after a power loss a file may still be short or zeroed (no fsync:
// this is a cache), which the record check on read catches. Any file that fails to read, is
// shorter or longer than indexed, or fails the record's framing/checksum, is a miss and is
// removed. Other files in the directory are left alone; "LOCK" holds an flock so that two
// DiskTiers (in one process or two) never share a directory.
//
// Recency survives a restart: every write and every hit stamps the file's mtime with a strictly
// increasing wall-clock time (CLOCK_REALTIME, nanoseconds, never below the newest stamp seen), and
// Open() rebuilds the LRU index from the mtimes (ties broken by name), removing leftover temp
// files and evicting down to the capacity. This is persisted metadata, not a timing decision, so
// it does not use the injected Clock.
//
// Page cache: reads use O_DIRECT into an aligned buffer, so a hit measures the disk and does not
// grow the page cache; where the file system refuses O_DIRECT (tmpfs) reads fall back to read() +
// posix_fadvise(DONTNEED). After a write the file's pages are written back and dropped
// (sync_file_range + DONTNEED) when drop_written_pages is set.
//
// A full file system (a write fails with ENOSPC or EDQUOT below the tier's size): the tier's
// size limit drops to the bytes it holds (at least one record), its oldest blocks are evicted to
// make room, the write is retried once, and one line is logged (at most one a minute). Later
// writes evict before writing, so the tier keeps working in the space the file system gives it;
// Stats().capacity_bytes shows the lowered limit (until the next Open). Tested through
// inject_write_error.
//
// Owner: the tier manager; every method but Stats() runs on its one I/O thread (block_store.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kvengine/status.h"
#include "tier/block_store.h"
#include "tier/lru_list.h"

namespace kvengine {

struct DiskTierOptions {
  std::string dir;                 // Created if missing.
  uint64_t capacity_bytes = 0;     // Record bytes kept (--kv-disk-size); must be > 0.
  bool use_o_direct = true;        // false: always buffered reads + DONTNEED.
  bool drop_written_pages = true;  // Write back and drop each written file's pages.
  // Fault injection (tests): called before each block file is written, with the record's size;
  // a nonzero errno fails that write as the file system would (ENOSPC: full). Null: none.
  std::function<int(uint64_t record_bytes)> inject_write_error = nullptr;
  // Receives the full-file-system line (one line, no newline); null: stderr.
  std::function<void(const std::string&)> log = nullptr;
};

class DiskTier final : public BlockStore {
 public:
  // Opens (creating if needed) and indexes the directory. Errors: empty path, zero capacity, a
  // path that is not a directory or cannot be created/written, a directory in use.
  static Result<std::unique_ptr<DiskTier>> Open(DiskTierOptions options);
  ~DiskTier() override;
  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

  std::string_view name() const override { return "disk"; }
  // OutOfRange if the record alone exceeds the capacity; Unavailable on an I/O error (the
  // previous value of the key, if any, stays).
  Status Put(const TierKey& key, std::span<const uint8_t> record) override;
  void GetMany(std::span<const TierKey> keys,
               std::vector<std::optional<std::vector<uint8_t>>>* out) override;
  void Erase(const TierKey& key) override;
  BlockStoreStats Stats() const override {
    return counters_.Snapshot(limit_bytes_.load(std::memory_order_relaxed));
  }

  // Indexed keys, least recently used first (I/O thread; tests).
  std::vector<TierKey> KeysLruFirst() const;
  // Whether reads use O_DIRECT: true until the file system first refuses it.
  bool direct_reads() const { return direct_ok_; }
  const std::string& dir() const { return options_.dir; }

 private:
  struct Entry {
    TierKey key;
    uint64_t size = 0;  // Record bytes = file size.
  };
  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };

  DiskTier(DiskTierOptions options, int dir_fd, int lock_fd);
  Status Scan();
  int32_t AddEntry(const TierKey& key, uint64_t size);  // Links it as the MRU.
  // Drops the entry from the index; unlinks its file when `unlink_file`.
  void RemoveEntry(int32_t slot, bool unlink_file);
  // Evicts LRU entries until `incoming` more bytes fit.
  void MakeRoom(uint64_t incoming);
  // Writes `record` to the key's file (temp + rename); on failure *err is the errno. Counts
  // nothing but evictions.
  Status WriteFile(const TierKey& key, std::span<const uint8_t> record, int* err);
  // After a write failed with `err` (ENOSPC, EDQUOT): lowers the limit to what fits and evicts
  // the oldest blocks so that `incoming` bytes fit; false when the tier holds nothing to free.
  bool ShrinkToFit(uint64_t incoming, int err);
  void Log(const std::string& line);
  // Reads slot's file into *out; false (the entry removed) when it is unusable.
  bool ReadRecord(int32_t slot, std::vector<uint8_t>* out);
  bool ReadDirect(int fd, uint64_t size, std::vector<uint8_t>* out, bool* refused);
  bool ReadBuffered(int fd, uint64_t size, std::vector<uint8_t>* out);
  // A strictly increasing CLOCK_REALTIME stamp in ns, for mtimes.
  int64_t NextStamp();
  void StampFile(const std::string& file_name);

  const DiskTierOptions options_;
  const int dir_fd_;   // The directory, for the *at() calls.
  const int lock_fd_;  // "LOCK", flock(LOCK_EX) held while open.
  bool direct_ok_;
  int64_t last_stamp_ns_ = 0;
  // The size limit: options_.capacity_bytes, lowered when the file system is full. Read by
  // Stats() on any thread.
  std::atomic<uint64_t> limit_bytes_;
  int64_t last_full_log_ns_ = -1;  // CLOCK_MONOTONIC of the last full-file-system line.
  uint64_t full_events_ = 0;       // Full-file-system failures since that line.
  std::vector<Entry> entries_;  // [slot]
  std::vector<int32_t> free_slots_;
  std::unordered_map<TierKey, int32_t, TierKeyHasher> index_;  // key -> slot
  LruList lru_;                                                // Every indexed slot.
  uint64_t bytes_ = 0;                                         // Sum of indexed sizes.
  std::unique_ptr<uint8_t, FreeDeleter> read_buf_;             // [read_buf_bytes_], 4 KiB aligned.
  uint64_t read_buf_bytes_ = 0;
  BlockStoreCounters counters_;
};

}  // namespace kvengine
