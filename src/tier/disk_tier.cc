#include "tier/disk_tier.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "base/checked_math.h"
#include "base/clock.h"
#include "tier/block_record.h"

namespace kvengine {
namespace {

constexpr std::string_view kSuffix = ".kvb";
constexpr std::string_view kTempSuffix = ".kvb.tmp";
constexpr uint64_t kDirectAlign = 4096;  // O_DIRECT buffer, offset and length alignment.

std::string FileName(const TierKey& key) { return key.Name() + std::string(kSuffix); }
std::string TempName(const TierKey& key) { return key.Name() + std::string(kTempSuffix); }

std::string Errno(int e) { return std::strerror(e); }

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool WriteAll(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= size_t(n);
  }
  return true;
}

// Reads from offset 0 into data[0, capacity) until `enough` bytes are in or the file ends;
// returns the count read or -1. Stopping at `enough` matters for O_DIRECT: a further read at
// the unaligned end-of-file offset would fail with EINVAL.
ssize_t ReadUpTo(int fd, uint8_t* data, size_t capacity, size_t enough) {
  size_t done = 0;
  while (done < enough) {
    ssize_t n = ::pread(fd, data + done, capacity - done, off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    done += size_t(n);
  }
  return ssize_t(done);
}

}  // namespace

Result<std::unique_ptr<DiskTier>> DiskTier::Open(DiskTierOptions options) {
  if (options.dir.empty()) return InvalidArgument("disk tier: empty directory path");
  if (options.capacity_bytes == 0) return InvalidArgument("disk tier: capacity must be > 0");
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) {
    return Unavailable(fmt::format("disk tier: cannot create {}: {}", options.dir, ec.message()));
  }
  if (!std::filesystem::is_directory(options.dir, ec)) {
    return InvalidArgument(fmt::format("disk tier: {} is not a directory", options.dir));
  }
  int dir_fd = ::open(options.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    return Unavailable(fmt::format("disk tier: cannot open {}: {}", options.dir, Errno(errno)));
  }
  int lock_fd = ::openat(dir_fd, "LOCK", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) {
    int e = errno;
    ::close(dir_fd);
    return Unavailable(fmt::format("disk tier: {} is not writable: {}", options.dir, Errno(e)));
  }
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    ::close(lock_fd);
    ::close(dir_fd);
    return Unavailable(
        fmt::format("disk tier: {} is in use by another disk tier: {}", options.dir, Errno(e)));
  }
  std::unique_ptr<DiskTier> tier(new DiskTier(std::move(options), dir_fd, lock_fd));
  KV_RETURN_IF_ERROR(tier->Scan());
  return tier;
}

DiskTier::DiskTier(DiskTierOptions options, int dir_fd, int lock_fd)
    : options_(std::move(options)),
      dir_fd_(dir_fd),
      lock_fd_(lock_fd),
      direct_ok_(options_.use_o_direct),
      limit_bytes_(options_.capacity_bytes) {}

DiskTier::~DiskTier() {
  ::close(lock_fd_);  // Releases the flock.
  ::close(dir_fd_);
}

Status DiskTier::Scan() {
  struct Found {
    TierKey key;
    uint64_t size;
    int64_t mtime_ns;
    std::string name;
  };
  std::vector<Found> found;
  int fd = ::dup(dir_fd_);
  DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
  if (d == nullptr) {
    if (fd >= 0) ::close(fd);
    return Unavailable(fmt::format("disk tier: cannot list {}: {}", options_.dir, Errno(errno)));
  }
  while (dirent* ent = ::readdir(d)) {
    std::string_view name = ent->d_name;
    if (EndsWith(name, kTempSuffix)) {  // A write that never reached its rename.
      ::unlinkat(dir_fd_, ent->d_name, 0);
      continue;
    }
    if (!EndsWith(name, kSuffix)) continue;  // Not ours (LOCK, ".", anything else).
    std::optional<TierKey> key = ParseTierKeyName(name.substr(0, name.size() - kSuffix.size()));
    struct stat st;
    if (!key || ::fstatat(dir_fd_, ent->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode)) {
      continue;
    }
    if (uint64_t(st.st_size) < kRecordHeaderBytes) {  // Cannot be a record.
      ::unlinkat(dir_fd_, ent->d_name, 0);
      BlockStoreCounters::Add(counters_.corrupt);
      continue;
    }
    int64_t mtime = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    found.push_back({*key, uint64_t(st.st_size), mtime, std::string(name)});
  }
  ::closedir(d);  // Closes the dup.
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return a.mtime_ns != b.mtime_ns ? a.mtime_ns < b.mtime_ns : a.name < b.name;
  });
  for (const Found& f : found) {
    AddEntry(f.key, f.size);
    last_stamp_ns_ = std::max(last_stamp_ns_, f.mtime_ns);
  }
  MakeRoom(0);  // The capacity may have shrunk since the last run.
  return Status::Ok();
}

int32_t DiskTier::AddEntry(const TierKey& key, uint64_t size) {
  int32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = int32_t(entries_.size());
    entries_.emplace_back();
  }
  entries_[size_t(slot)] = Entry{key, size};
  index_[key] = slot;
  lru_.PushMru(slot);
  bytes_ += size;
  counters_.blocks.store(index_.size(), std::memory_order_relaxed);
  counters_.bytes.store(bytes_, std::memory_order_relaxed);
  return slot;
}

void DiskTier::RemoveEntry(int32_t slot, bool unlink_file) {
  Entry& e = entries_[size_t(slot)];
  if (unlink_file) ::unlinkat(dir_fd_, FileName(e.key).c_str(), 0);  // ENOENT is fine.
  if (lru_.Linked(slot)) lru_.Remove(slot);
  index_.erase(e.key);
  bytes_ -= e.size;
  e = Entry{};
  free_slots_.push_back(slot);
  counters_.blocks.store(index_.size(), std::memory_order_relaxed);
  counters_.bytes.store(bytes_, std::memory_order_relaxed);
}

void DiskTier::MakeRoom(uint64_t incoming) {
  const uint64_t limit = limit_bytes_.load(std::memory_order_relaxed);
  while (bytes_ + incoming > limit && lru_.size() > 0) {
    RemoveEntry(lru_.Lru(), /*unlink_file=*/true);
    BlockStoreCounters::Add(counters_.evictions);
  }
}

int64_t DiskTier::NextStamp() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  int64_t now = int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  last_stamp_ns_ = std::max(now, last_stamp_ns_ + 1);
  return last_stamp_ns_;
}

void DiskTier::StampFile(const std::string& file_name) {
  int64_t stamp = NextStamp();
  timespec times[2] = {{0, UTIME_OMIT}, {time_t(stamp / 1000000000), long(stamp % 1000000000)}};
  ::utimensat(dir_fd_, file_name.c_str(), times, 0);  // Best effort: only recency is lost.
}

Status DiskTier::Put(const TierKey& key, std::span<const uint8_t> record) {
  const uint64_t size = record.size();
  if (size > options_.capacity_bytes) {
    BlockStoreCounters::Add(counters_.errors);
    return OutOfRange(fmt::format("disk tier: record of {} bytes exceeds the capacity {}", size,
                                  options_.capacity_bytes));
  }
  int err = 0;
  Status s = WriteFile(key, record, &err);
  if (!s.ok() && (err == ENOSPC || err == EDQUOT) && ShrinkToFit(size, err)) {
    s = WriteFile(key, record, &err);  // Once: a second failure is the file system's to fix.
  }
  if (!s.ok()) {
    BlockStoreCounters::Add(counters_.errors);
    return s;
  }
  BlockStoreCounters::Add(counters_.bytes_written, size);
  return s;
}

Status DiskTier::WriteFile(const TierKey& key, std::span<const uint8_t> record, int* err) {
  const uint64_t size = record.size();
  // The old version of the key stays readable until the rename, so it is not an eviction
  // candidate, and its bytes are only released once the new file is in place.
  auto it = index_.find(key);
  const int32_t old_slot = it != index_.end() ? it->second : -1;
  const uint64_t old_size = old_slot >= 0 ? entries_[size_t(old_slot)].size : 0;
  if (old_slot >= 0) lru_.Remove(old_slot);
  MakeRoom(size > old_size ? size - old_size : 0);

  const std::string temp = TempName(key);
  const std::string final_name = FileName(key);
  auto fail = [&](const char* what, int e) {
    ::unlinkat(dir_fd_, temp.c_str(), 0);
    if (old_slot >= 0) lru_.PushMru(old_slot);
    *err = e;
    return Unavailable(fmt::format("disk tier: {} {}/{}: {}", what, options_.dir, temp, Errno(e)));
  };
  int fd = ::openat(dir_fd_, temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("cannot create", errno);
  const int injected = options_.inject_write_error ? options_.inject_write_error(size) : 0;
  if (injected != 0 || !WriteAll(fd, record.data(), record.size())) {
    int e = injected != 0 ? injected : errno;
    ::close(fd);
    return fail("cannot write", e);
  }
  if (options_.drop_written_pages) {
    // DONTNEED drops only clean pages: write them back first (data only, no journal flush).
    ::sync_file_range(
        fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  }
  ::close(fd);
  StampFile(temp);
  if (::renameat(dir_fd_, temp.c_str(), dir_fd_, final_name.c_str()) != 0) {
    return fail("cannot rename", errno);
  }
  if (old_slot >= 0) RemoveEntry(old_slot, /*unlink_file=*/false);  // Already replaced.
  AddEntry(key, size);
  return Status::Ok();
}

bool DiskTier::ShrinkToFit(uint64_t incoming, int err) {
  const uint64_t held = bytes_, old_limit = limit_bytes_.load(std::memory_order_relaxed);
  const uint64_t evicted_before = counters_.evictions.load(std::memory_order_relaxed);
  if (held > 0) {
    limit_bytes_.store(std::min(old_limit, std::max(held, incoming)), std::memory_order_relaxed);
    MakeRoom(incoming);
  }
  // One line now, then at most one a minute summing up the failures in between.
  ++full_events_;
  const int64_t now = SteadyClock::Get().NowNanos();
  if (last_full_log_ns_ < 0 || now - last_full_log_ns_ >= int64_t{60} * 1000000000) {
    const uint64_t evicted = counters_.evictions.load(std::memory_order_relaxed) - evicted_before;
    Log(held == 0 ? fmt::format("disk tier {}: the file system is full ({}) and the tier holds "
                                "no block to evict ({} failed writes)",
                                options_.dir, Errno(err), full_events_)
                  : fmt::format("disk tier {}: the file system is full ({}, {} failed writes): "
                                "evicted the {} oldest blocks ({} bytes), the tier's size is now "
                                "{} bytes (was {}); retrying",
                                options_.dir, Errno(err), full_events_, evicted, held - bytes_,
                                limit_bytes_.load(std::memory_order_relaxed), old_limit));
    last_full_log_ns_ = now;
    full_events_ = 0;
  }
  return held > 0;
}

void DiskTier::Log(const std::string& line) {
  if (options_.log) {
    options_.log(line);
  } else {
    std::fprintf(stderr, "kvengine: %s\n", line.c_str());
  }
}

void DiskTier::GetMany(std::span<const TierKey> keys,
                       std::vector<std::optional<std::vector<uint8_t>>>* out) {
  out->resize(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    std::optional<std::vector<uint8_t>>& slot_out = (*out)[i];
    auto it = index_.find(keys[i]);
    if (it == index_.end()) {
      slot_out.reset();
      BlockStoreCounters::Add(counters_.misses);
      continue;
    }
    if (!slot_out) slot_out.emplace();
    const int32_t slot = it->second;
    if (!ReadRecord(slot, &*slot_out)) {
      slot_out.reset();
      BlockStoreCounters::Add(counters_.misses);
      continue;
    }
    lru_.Touch(slot);
    StampFile(FileName(keys[i]));
    BlockStoreCounters::Add(counters_.hits);
    BlockStoreCounters::Add(counters_.bytes_read, slot_out->size());
  }
}

bool DiskTier::ReadRecord(int32_t slot, std::vector<uint8_t>* out) {
  const Entry entry = entries_[size_t(slot)];
  const std::string file = FileName(entry.key);
  auto drop = [&](std::atomic<uint64_t>& reason) {
    RemoveEntry(slot, /*unlink_file=*/true);
    BlockStoreCounters::Add(reason);
    return false;
  };
  int fd = -1;
  if (direct_ok_) {
    fd = ::openat(dir_fd_, file.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0 && errno == EINVAL) direct_ok_ = false;  // The file system refuses O_DIRECT.
  }
  if (!direct_ok_) fd = ::openat(dir_fd_, file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {  // Removed behind our back: just forget it.
      RemoveEntry(slot, /*unlink_file=*/false);
      return false;
    }
    return drop(counters_.errors);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || uint64_t(st.st_size) != entry.size) {
    ::close(fd);
    return drop(counters_.corrupt);  // Truncated or rewritten by someone else.
  }
  bool ok;
  if (direct_ok_) {
    bool refused = false;
    ok = ReadDirect(fd, entry.size, out, &refused);
    if (refused) {  // Opened with O_DIRECT but reads refused (some FUSE/overlay mounts).
      direct_ok_ = false;
      ::close(fd);
      fd = ::openat(dir_fd_, file.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return drop(counters_.errors);
      ok = ReadBuffered(fd, entry.size, out);
    }
  } else {
    ok = ReadBuffered(fd, entry.size, out);
  }
  ::close(fd);
  if (!ok) return drop(counters_.errors);
  RecordMeta meta;
  if (CheckRecordIntegrity(*out, &meta, nullptr) != RecordCheck::kOk ||
      meta.hash != entry.key.hash || meta.group != entry.key.group ||
      meta.payload_format != entry.key.format) {
    return drop(counters_.corrupt);
  }
  return true;
}

bool DiskTier::ReadDirect(int fd, uint64_t size, std::vector<uint8_t>* out, bool* refused) {
  uint64_t want;
  if (!CheckedAlignUp(std::max<uint64_t>(size, 1), kDirectAlign, &want)) return false;
  if (want > read_buf_bytes_) {
    read_buf_.reset(static_cast<uint8_t*>(std::aligned_alloc(kDirectAlign, want)));
    read_buf_bytes_ = read_buf_ ? want : 0;
    if (!read_buf_) return false;
  }
  ssize_t n = ReadUpTo(fd, read_buf_.get(), want, size);
  if (n < 0) {
    *refused = errno == EINVAL;
    return false;
  }
  if (uint64_t(n) != size) return false;  // Shorter than fstat said: changed under us.
  out->assign(read_buf_.get(), read_buf_.get() + size);
  return true;
}

bool DiskTier::ReadBuffered(int fd, uint64_t size, std::vector<uint8_t>* out) {
  out->resize(size);
  ssize_t n = ReadUpTo(fd, out->data(), size, size);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  return n >= 0 && uint64_t(n) == size;
}

void DiskTier::Erase(const TierKey& key) {
  auto it = index_.find(key);
  if (it != index_.end()) RemoveEntry(it->second, /*unlink_file=*/true);
}

std::vector<TierKey> DiskTier::KeysLruFirst() const {
  std::vector<TierKey> keys;
  for (int32_t slot : lru_.Order()) keys.push_back(entries_[size_t(slot)].key);
  return keys;
}

}  // namespace kvengine
