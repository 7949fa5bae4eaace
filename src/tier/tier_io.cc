// TierManager's I/O thread: queued writes (demotions, publications) and prefetches against the
// disk and Redis stores. Every record read back is verified (framing, checksum, identity); one
// that does not verify is a miss, and a damaged disk file is removed.
#include <cstring>

#include "base/check.h"
#include "tier/block_record.h"
#include "tier/tier_manager.h"

namespace kvengine {

void TierManager::IoLoop() {
  for (;;) {
    WriteJob write;
    FetchJob fetch;
    bool is_fetch = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      io_wake_.wait(lock, [&] { return stopping_ || !writes_.empty() || !fetches_.empty(); });
      // Prefetches first: a request waits on them; writes only keep data for later.
      if (!fetches_.empty()) {
        fetch = std::move(fetches_.front());
        fetches_.pop_front();
        is_fetch = true;
      } else if (!writes_.empty()) {
        write = std::move(writes_.front());
        writes_.pop_front();
      } else {
        return;  // Stopping with nothing left to write.
      }
      ++busy_;
    }
    if (is_fetch) {
      RunFetch(fetch);
    } else {
      RunWrite(write);
    }
    bool drained = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_;
      if (!is_fetch) queued_write_bytes_ -= write.payload.size();
      drained = writes_.empty();
    }
    idle_.notify_all();
    // Wake the engine after a prefetch (it lands the blocks) and when the write queue drains (it
    // republishes the tier counters, so /metrics is current on an idle server too).
    if ((is_fetch || drained) && on_ready_) on_ready_();
  }
}

void TierManager::RunWrite(WriteJob& job) {
  BlockStore* store = job.target == TierKind::kDisk ? disk_.get() : redis_.get();
  if (store == nullptr) return;
  const RecordMeta meta = MetaOf(job.key);
  std::vector<uint8_t> record;
  if (transcoders_.empty()) {
    EncodeRecordInto(meta, job.payload, &record);
  } else {
    std::vector<uint8_t> cold(meta.payload_bytes);
    transcoders_[size_t(job.key.group)].Encode(job.payload, cold);
    EncodeRecordInto(meta, cold, &record);
  }
  // A failure is counted by the store; the block is lost.
  (void)store->Put(StoreKey(job.key), record);
}

uint64_t TierManager::FetchFrom(BlockStore* store, TierKind kind, const FetchJob& job,
                                size_t* next, std::vector<Landed>* out) {
  // One batched read of every remaining key (Redis pipelines it), then the run of blocks whose
  // every key verifies.
  std::vector<TierKey> keys;  // The stores' keys (StoreKey); the job's are RAM keys.
  std::vector<size_t> first;  // [block] index of its first key in `keys`.
  for (size_t j = *next; j < job.blocks.size(); ++j) {
    first.push_back(keys.size());
    for (const TierKey& k : job.blocks[j]) keys.push_back(StoreKey(k));
  }
  first.push_back(keys.size());
  if (keys.empty()) return 0;
  // Disk reads one file per key: read block by block so a miss stops early.
  const bool batch = kind == TierKind::kRedis;
  std::vector<std::optional<std::vector<uint8_t>>>& got = replies_;
  const double t0 = Seconds();
  uint64_t bytes = 0;
  size_t j = 0;
  for (; *next + j < job.blocks.size(); ++j) {
    const size_t k0 = first[j], k1 = first[j + 1];
    std::span<const std::optional<std::vector<uint8_t>>> recs;
    if (batch) {
      if (j == 0) store->GetMany(keys, &got);
      recs = std::span(got).subspan(k0, k1 - k0);
    } else {
      store->GetMany(std::span(keys).subspan(k0, k1 - k0), &got);
      recs = got;
    }
    std::vector<Landed> block;
    for (size_t i = 0; i < recs.size(); ++i) {
      const TierKey& key = keys[k0 + i];
      if (!recs[i]) break;
      const RecordMeta want = MetaOf(key);
      std::span<const uint8_t> payload;
      // The built-in stores verified framing and checksum on read (block_store.h); what is left
      // is identity: the record of this block, this model, this format.
      if (CheckRecord(*recs[i], want, &payload, verify_checksums_) != RecordCheck::kOk) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          ++corrupt_[size_t(kind)];
        }
        store->Erase(key);  // Never served; a later demotion may write a good copy.
        break;
      }
      bytes += recs[i]->size();
      std::vector<uint8_t> pool = TakeBuffer(layout_.bytes_per_block.at(size_t(key.group)));
      if (transcoders_.empty()) {
        std::memcpy(pool.data(), payload.data(), payload.size());
      } else {
        transcoders_[size_t(key.group)].Decode(payload, pool);
      }
      TierKey ram_key = key;
      ram_key.format = kPayloadRawPool;  // RAM holds pool bytes.
      block.push_back(Landed{ram_key, kind, std::move(pool)});
    }
    if (block.size() != recs.size()) break;
    for (Landed& l : block) out->push_back(std::move(l));
  }
  Observe(kind, bytes, Seconds() - t0);
  *next += j;
  return bytes;
}

void TierManager::RunFetch(FetchJob& job) {
  FetchDone done{job.ticket, {}, false};
  size_t next = 0;
  const double t0 = Seconds();
  if (job.use_disk && disk_ != nullptr) FetchFrom(disk_.get(), TierKind::kDisk, job, &next, &done.blocks);
  if (job.use_redis && redis_ != nullptr) {
    FetchFrom(redis_.get(), TierKind::kRedis, job, &next, &done.blocks);
  }
  // Late: the fetch took longer than recomputing its blocks would have.
  const double rate = prefill_tokens_per_s_.load(std::memory_order_relaxed);
  if (rate > 0 && next > 0) {
    done.late = Seconds() - t0 > double(next) * layout_.block_size / rate;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_.push_back(std::move(done));
  }
}

}  // namespace kvengine
