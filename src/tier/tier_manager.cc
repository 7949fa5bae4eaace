// TierManager: the engine-thread half (hook, RAM, queues, cost model). The I/O thread's half is
// in tier_io.cc.
#include "tier/tier_manager.h"

#include <algorithm>

#include "base/check.h"

namespace kvengine {

const char* TierKindName(TierKind t) {
  switch (t) {
    case TierKind::kRam: return "ram";
    case TierKind::kDisk: return "disk";
    case TierKind::kRedis: return "redis";
  }
  return "?";
}

namespace {

// Before a tier's first measured transfer: deliberately modest guesses, so that a prefetch is
// tried and measured rather than ruled out.
double PriorBandwidth(TierKind t) {
  switch (t) {
    case TierKind::kRam: return 4e9;
    case TierKind::kDisk: return 5e8;
    case TierKind::kRedis: return 2e8;
  }
  return 1e8;
}

}  // namespace

TierManager::TierManager(TierManagerOptions options, TierLayout layout,
                         std::unique_ptr<BlockStore> disk, std::unique_ptr<BlockStore> redis)
    : options_(options),
      layout_(std::move(layout)),
      clock_(options.clock ? options.clock : &SteadyClock::Get()),
      ram_(RamTierOptions{options.ram_bytes > 0 ? options.ram_bytes : options.staging_bytes}),
      ram_is_tier_(options.ram_bytes > 0),
      disk_(std::move(disk)),
      redis_(std::move(redis)) {
  if (layout_.cold_dtype) {
    KV_CHECK(layout_.groups.size() == layout_.bytes_per_block.size());
    for (const KvGroupSpec& g : layout_.groups) {
      transcoders_.emplace_back(g, layout_.block_size, *layout_.cold_dtype);
    }
    payload_format_ = TranscodedPayloadFormat(*layout_.cold_dtype);
  }
  if (has_slow_tiers()) io_ = std::thread([this] { IoLoop(); });
}

RecordMeta TierManager::MetaOf(const TierKey& key) const {
  RecordMeta m;
  m.namespace_digest = layout_.namespace_digest;
  m.group = key.group;
  m.hash = key.hash;
  m.payload_bytes = layout_.bytes_per_block.at(size_t(key.group));
  m.payload_format = payload_format_;
  if (!transcoders_.empty()) {
    m.payload_bytes = transcoders_[size_t(key.group)].cold_bytes();
  }
  return m;
}

TierManager::~TierManager() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  io_wake_.notify_all();
  if (io_.joinable()) io_.join();
}

double TierManager::Seconds() const { return double(clock_->NowNanos()) * 1e-9; }

void TierManager::RamInsert(const TierKey& key, std::span<const uint8_t> bytes, TierKind origin) {
  const bool ok = ram_.Insert(key, bytes, [&](const TierKey& k, std::span<const uint8_t> b) {
    // Cascade: what leaves RAM goes to disk (if it came from disk it is still there).
    const auto it = origin_.find(k);
    const bool from_disk = it != origin_.end() && it->second == TierKind::kDisk;
    if (disk_ != nullptr && !from_disk) QueueWrite(k, TierKind::kDisk, b);
    if (it != origin_.end()) origin_.erase(it);
  });
  if (ok) origin_[key] = origin;
}

void TierManager::OnEvict(int group, const BlockHash& hash, std::span<const uint8_t> bytes) {
  ++demotions_;
  const TierKey key{hash, group};
  if (ram_is_tier_) {
    RamInsert(key, bytes, TierKind::kRam);
  } else if (disk_ != nullptr) {
    QueueWrite(key, TierKind::kDisk, bytes);
  }
  if (redis_ != nullptr && options_.redis_write == RedisWritePolicy::kEvicted) {
    QueueWrite(key, TierKind::kRedis, bytes);
  }
}

void TierManager::OnComplete(int group, const BlockHash& hash, std::span<const uint8_t> bytes) {
  if (redis_ != nullptr && options_.redis_write == RedisWritePolicy::kAll) {
    QueueWrite(TierKey{hash, group}, TierKind::kRedis, bytes);
  }
}

bool TierManager::Has(int group, const BlockHash& hash) const {
  return ram_.Contains(TierKey{hash, group}) && WorthFetching(TierKind::kRam, layout_.block_size);
}

bool TierManager::Fill(int group, const BlockHash& hash, std::span<uint8_t> dst) {
  const TierKey key{hash, group};
  const double t0 = Seconds();
  if (!ram_.CopyOut(key, dst)) return false;
  Observe(TierKind::kRam, dst.size(), Seconds() - t0);
  const auto it = origin_.find(key);
  ++prefix_hits_[size_t(it == origin_.end() ? TierKind::kRam : it->second)];
  return true;
}

void TierManager::Pin(int group, const BlockHash& hash) { ram_.Pin(TierKey{hash, group}); }
void TierManager::Unpin(int group, const BlockHash& hash) { ram_.Unpin(TierKey{hash, group}); }

void TierManager::QueueWrite(const TierKey& key, TierKind target, std::span<const uint8_t> bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queued_write_bytes_ + bytes.size() > options_.write_queue_bytes) {
      ++writes_dropped_;
      return;
    }
    queued_write_bytes_ += bytes.size();
    writes_.push_back(WriteJob{key, target, std::vector<uint8_t>(bytes.begin(), bytes.end())});
  }
  io_wake_.notify_one();
}

uint64_t TierManager::Prefetch(std::vector<std::vector<TierKey>> blocks) {
  if (blocks.empty() || !has_slow_tiers()) return 0;
  const int64_t tokens = int64_t(blocks.size()) * layout_.block_size;
  FetchJob job{next_ticket_, std::move(blocks), disk_ != nullptr && WorthFetching(TierKind::kDisk, tokens),
               redis_ != nullptr && WorthFetching(TierKind::kRedis, tokens)};
  if (!job.use_disk && !job.use_redis) return 0;
  ++next_ticket_;
  ++prefetches_issued_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fetches_.push_back(std::move(job));
  }
  io_wake_.notify_one();
  return next_ticket_ - 1;
}

std::vector<uint64_t> TierManager::Poll() {
  std::vector<FetchDone> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done.swap(done_);
  }
  std::vector<uint64_t> tickets;
  for (FetchDone& d : done) {
    tickets.push_back(d.ticket);
    prefetched_blocks_ += d.blocks.size();
    prefetches_useless_ += d.blocks.empty();
    prefetches_late_ += d.late;
    // Last block first: the prefix's first blocks end up most recently used, so if RAM is too
    // small for all of them it drops the tail of the run, not its head.
    for (auto it = d.blocks.rbegin(); it != d.blocks.rend(); ++it) {
      RamInsert(it->key, it->payload, it->source);
    }
    RecycleBuffers(&d.blocks);
  }
  return tickets;
}

void TierManager::RecycleBuffers(std::vector<Landed>* blocks) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Landed& l : *blocks) {
    // Fresh memory is slow to fault in (tens of microseconds per page on some VMs): keep up to
    // a staging area's worth of block buffers for the next fetches.
    if (spare_bytes_ + l.payload.capacity() > options_.staging_bytes) break;
    spare_bytes_ += l.payload.capacity();
    spare_.push_back(std::move(l.payload));
  }
}

std::vector<uint8_t> TierManager::TakeBuffer(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = spare_.size(); i-- > 0;) {
    if (spare_[i].capacity() >= bytes) {
      std::vector<uint8_t> v = std::move(spare_[i]);
      spare_bytes_ -= v.capacity();
      spare_[i] = std::move(spare_.back());
      spare_.pop_back();
      v.resize(bytes);
      return v;
    }
  }
  return std::vector<uint8_t>(bytes);
}

bool TierManager::WorthFetching(TierKind t, int64_t tokens) const {
  const double rate = prefill_tokens_per_s_.load(std::memory_order_relaxed);
  if (rate <= 0 || tokens <= 0) return true;  // Nothing measured: try it.
  const double fetch_s = double(tokens) * double(layout_.bytes_per_token) / Bandwidth(t);
  const double compute_s = double(tokens) / rate;
  return fetch_s < compute_s;
}

void TierManager::ObservePrefill(int64_t tokens, double seconds) {
  if (tokens <= 0 || seconds <= 0) return;
  const double rate = double(tokens) / seconds;
  const double old = prefill_tokens_per_s_.load(std::memory_order_relaxed);
  prefill_tokens_per_s_.store(old <= 0 ? rate : 0.8 * old + 0.2 * rate, std::memory_order_relaxed);
}

void TierManager::Observe(TierKind t, uint64_t bytes, double seconds) {
  if (bytes == 0 || seconds <= 0) return;
  const double bw = double(bytes) / seconds;
  std::lock_guard<std::mutex> lock(mu_);
  double& e = bandwidth_[size_t(t)];
  e = e <= 0 ? bw : 0.9 * e + 0.1 * bw;
  last_bandwidth_[size_t(t)] = bw;
}

double TierManager::Bandwidth(TierKind t) const {
  std::lock_guard<std::mutex> lock(mu_);
  const double bw = bandwidth_[size_t(t)];
  return bw > 0 ? bw : PriorBandwidth(t);
}

void TierManager::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return writes_.empty() && busy_ == 0; });
}

void TierManager::SpillRamToDisk(bool clear) {
  if (disk_ != nullptr) {
    std::vector<uint8_t> buf;
    for (const TierKey& k : ram_.KeysLruFirst()) {
      const auto it = origin_.find(k);
      if (it != origin_.end() && it->second == TierKind::kDisk) continue;  // On disk already.
      buf.resize(ram_.SizeOf(k).value_or(0));
      if (ram_.Peek(k, buf)) {
        // Spilling waits for room instead of dropping: it is not on the engine's hot path.
        for (;;) {
          {
            std::lock_guard<std::mutex> lock(mu_);
            if (queued_write_bytes_ == 0 ||
                queued_write_bytes_ + buf.size() <= options_.write_queue_bytes) {
              break;
            }
          }
          Flush();
        }
        QueueWrite(k, TierKind::kDisk, buf);
      }
    }
    Flush();
  }
  if (clear) ClearRam();
}

void TierManager::ClearRam() {
  ram_.Clear();
  origin_.clear();
}

TierStats TierManager::Stats() const {
  TierStats s;
  const RamTierStats r = ram_.Stats();
  TierCounters& ram = s.tiers[size_t(TierKind::kRam)];
  ram.present = ram_is_tier_;
  ram.blocks = r.blocks;
  ram.bytes = r.bytes;
  ram.capacity_bytes = r.capacity_bytes;
  ram.hits = r.hits;
  ram.misses = r.misses;
  ram.bytes_read = r.bytes_read;
  ram.bytes_written = r.bytes_written;
  auto from_store = [](const BlockStoreStats& b, TierCounters* c) {
    c->present = true;
    c->blocks = b.blocks;
    c->bytes = b.bytes;
    c->capacity_bytes = b.capacity_bytes;
    c->hits = b.hits;
    c->misses = b.misses;
    c->bytes_read = b.bytes_read;
    c->bytes_written = b.bytes_written;
    c->errors = b.errors;
    c->corrupt = b.corrupt;
  };
  if (disk_ != nullptr) from_store(disk_->Stats(), &s.tiers[size_t(TierKind::kDisk)]);
  if (redis_ != nullptr) {
    const BlockStoreStats b = redis_->Stats();
    from_store(b, &s.tiers[size_t(TierKind::kRedis)]);
    s.redis_reconnects = b.reconnects;
    s.redis_breaker_open = b.breaker_open;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int t = 0; t < kNumTierKinds; ++t) {
      s.tiers[t].bandwidth_bytes_per_s = bandwidth_[t];
      s.tiers[t].last_bandwidth_bytes_per_s = last_bandwidth_[t];
      s.tiers[t].corrupt += corrupt_[t];
    }
    s.writes_dropped = writes_dropped_;
  }
  s.demotions = demotions_;
  s.prefetches_issued = prefetches_issued_;
  s.prefetches_useless = prefetches_useless_;
  s.prefetches_late = prefetches_late_;
  s.prefetched_blocks = prefetched_blocks_;
  for (int t = 0; t < kNumTierKinds; ++t) s.prefix_hit_blocks[t] = prefix_hits_[t];
  return s;
}

}  // namespace kvengine
