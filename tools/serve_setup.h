// What `kvengine serve` and `kvengine bench-serve` (without --url) share: the model and engine
// flags, and loading the model and starting the engine behind an HttpServer. Flags are
// registered in serve's order, in two groups around serve's own --host/--port, so serve's help
// text reads as it always has.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kvengine/status.h"
#include "cli_flags.h"
#include "gguf/gguf_reader.h"
#include "model/model.h"
#include "kvengine/engine.h"
#include "server/chat_template.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace kvengine::cli {

struct ServeFlags {
  CommonFlags common;
  server::HttpServerOptions http;
  std::string served_model_name;
  int threads = 0;
  int max_num_seqs = 64;
  int64_t max_num_batched_tokens = 2048;
  int max_queued_requests = 256;
  bool prefix_caching = true;
  std::string kv_memory;
  std::string kv_policy = "paged";
  std::string step_policy = "mixed";
  std::string max_body = "8MiB";
  int http_threads = 0;
  double drain_timeout_s = 30;
  // Offload tiers (docs/tiers.md).
  std::string swap_space = "0";
  std::string kv_disk_path;
  std::string kv_disk_size = "8GiB";
  std::string kv_redis;
  std::string kv_redis_write = "all";
  std::string kv_tier_dtype;
};

// -m, --served-model-name, -c, --kv-dtype, --kv-dtype-map, --block-size. Returns the options added.
std::vector<CLI::Option*> AddServeModelFlags(CLI::App* cmd, ServeFlags* f);
// -t, --max-num-seqs, --max-num-batched-tokens, --max-queued-requests,
// --[no-]enable-prefix-caching, --kv-cache-memory-bytes, --kv-policy, and the offload tiers:
// --swap-space, --kv-disk-path, --kv-disk-size, --kv-redis, --kv-redis-write, --kv-tier-dtype.
// Returns the
// options added.
std::vector<CLI::Option*> AddServeEngineFlags(CLI::App* cmd, ServeFlags* f);

// A loaded model with its engine started.
struct Loaded {
  std::shared_ptr<const GgufFile> file;
  std::shared_ptr<const Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Engine> engine;
  int64_t max_model_len = 0;
  server::ChatTemplate chat_template;
  std::string name;
};

// Loads the model and tokenizer, creates and starts the engine, and logs its KV capacity to
// stderr as "<who>: ..." lines.
Result<Loaded> LoadAndStart(const ServeFlags& f, std::string_view who);

// The offload tiers the flags ask for.
Result<TierConfig> ResolveTiers(const ServeFlags& f);

// Serve's HTTP options from the flags: body limit, worker threads, choices per request.
Status ResolveHttpOptions(ServeFlags* f);

// Everything the flags say that can be checked without loading the model (ResolveHttpOptions
// included): the values, the tiers (a Redis endpoint that parses, a disk path that is a
// directory or does not exist yet), the scheduler limits, -m (a regular file or a known preset)
// and the KV dtype map file. Serve calls it before binding its port, so a bad flag or file fails
// before "listening".
Status CheckServeFlags(ServeFlags* f);

// The ServedModel that publishes `loaded` (through `backend`) on an HttpServer.
server::ServedModel MakeServedModel(const Loaded& loaded, server::InferenceBackend* backend);

}  // namespace kvengine::cli
