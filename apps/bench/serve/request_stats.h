// RequestRecord: one benchmark request as the client saw it, and its latencies under vLLM's
// benchmark definitions (benchmarks/benchmark_serving.py):
//   TTFT  first output token's arrival - send time
//   E2E   end of the stream - send time
//   TPOT  (E2E - TTFT) / (output tokens - 1); only for requests with two or more output tokens
//   ITL   the gaps between successive chunks that carried output tokens (a chunk carrying several
//         tokens is one arrival: the user saw them at once)
// Times are seconds since the benchmark started (one steady clock for every request).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvengine::loadgen {

struct RequestRecord {
  int32_t conversation = 0;   // Index of the conversation (single-turn: of the request).
  int32_t turn = 0;           // Turn within the conversation.
  int64_t prompt_tokens = 0;  // Token ids sent.
  int64_t max_tokens = 0;     // Output tokens asked for (ignore_eos: the output length).
  // usage.completion_tokens when the server reported it, else the tokens counted in chunks.
  int64_t output_tokens = 0;
  int64_t cached_tokens = -1;   // usage.prompt_tokens_details.cached_tokens; -1: not reported.
  double send_s = 0;            // The request was written.
  double end_s = 0;             // The stream ended (or the request failed).
  std::vector<double> chunk_s;  // Arrival of each chunk carrying output tokens, in order.
  bool ok = false;
  std::string error;  // Why it failed (!ok).

  // Requires ok && !chunk_s.empty().
  double Ttft() const { return chunk_s.front() - send_s; }
  double E2e() const { return end_s - send_s; }
  // nullopt unless ok with >= 2 output tokens and a first token.
  std::optional<double> Tpot() const;
  // Appends this request's inter-chunk gaps to *out.
  void AppendItls(std::vector<double>* out) const;
};

}  // namespace kvengine::loadgen
