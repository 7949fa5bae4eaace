// Micro-benchmarks of the KV manager's hot operations: block allocate/free, decode appends,
// prefix lookups and forks. Run: build/src/kv/kv_bench
#include <benchmark/benchmark.h>

#include <numeric>

#include "kv/block_pool.h"
#include "kv/kv_cache_manager.h"
#include "kv/kv_test_util.h"

namespace kvengine {
namespace {

std::unique_ptr<KvCacheManager> MakeManager(int32_t blocks, bool prefix) {
  KvCacheConfig c;
  c.groups = {testing::FullGroup(32, 8, 128, KvDtype::kF16)};
  c.block_size = 16;
  c.num_blocks = blocks;
  c.enable_prefix_caching = prefix;
  c.allocate_storage = false;
  return std::move(KvCacheManager::Create(c)).value();
}

void BM_PoolAllocateFree(benchmark::State& state) {
  BlockPool pool(4096);
  bool evicted;
  for (auto _ : state) {
    const int32_t b = pool.Allocate(&evicted);
    pool.Release(b, false);
    benchmark::DoNotOptimize(b);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PoolAllocateFree);

void BM_PoolEvictCached(benchmark::State& state) {
  BlockPool pool(4096);
  bool evicted;
  for (int i = 0; i < 4096; ++i) pool.Allocate(&evicted);
  for (int i = 0; i < 4096; ++i) pool.Release(i, true);
  for (auto _ : state) {
    const int32_t b = pool.Allocate(&evicted);  // Always evicts the LRU head.
    pool.Release(b, true);
    benchmark::DoNotOptimize(b);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PoolEvictCached);

// One decode step of one sequence: append a token, mark it computed (hashing a full block
// every 16 tokens when prefix caching is on).
void BM_DecodeAppend(benchmark::State& state) {
  auto m = MakeManager(1 << 16, state.range(0) != 0);
  SeqId id = 0;
  KV_CHECK(m->AddSequence(id).ok());
  int32_t tok = 0;
  for (auto _ : state) {
    if (m->NumTokens(id) >= 8192) {
      state.PauseTiming();
      m->Release(id);
      KV_CHECK(m->AddSequence(++id).ok());
      state.ResumeTiming();
    }
    ++tok;
    KV_CHECK(m->Append(id, std::span(&tok, 1)).ok);
    KV_CHECK(m->MarkComputed(id, m->NumTokens(id)).ok());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeAppend)->Arg(0)->Arg(1);

// Longest-prefix lookup of a 2048-token prompt that is fully cached (128 SHA-256 block hashes
// plus 128 index probes).
void BM_PrefixLookup2k(benchmark::State& state) {
  auto m = MakeManager(4096, true);
  std::vector<int32_t> prompt(2048);
  std::iota(prompt.begin(), prompt.end(), 0);
  KV_CHECK(m->AddSequence(1).ok());
  KV_CHECK(m->Append(1, prompt).ok);
  KV_CHECK(m->MarkComputed(1, 2048).ok());
  for (auto _ : state) {
    const PrefixLookup l = m->LookupPrefix(prompt, "", 2048);
    benchmark::DoNotOptimize(l.cached_tokens);
  }
  state.SetItemsProcessed(state.iterations() * 2048);
}
BENCHMARK(BM_PrefixLookup2k);

void BM_ForkRelease4k(benchmark::State& state) {
  auto m = MakeManager(4096, true);
  std::vector<int32_t> prompt(4096, 3);
  KV_CHECK(m->AddSequence(1).ok());
  KV_CHECK(m->Append(1, prompt).ok);
  KV_CHECK(m->MarkComputed(1, 4096).ok());
  for (auto _ : state) {
    KV_CHECK(m->Fork(1, 2).ok());
    m->Release(2);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ForkRelease4k);

}  // namespace
}  // namespace kvengine
