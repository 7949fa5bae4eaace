// Text and JSON reports of the decode benchmark.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "report/perf_reports.h"

namespace kvengine {

std::string FormatDecodeBenchText(const DecodeBenchResult& r) {
  const DecodeBenchOptions& o = r.options;
  std::string s = fmt::format(
      "Decode benchmark: {}, {} thread{}, KV block {}; read bandwidth this run {:.1f} GB/s "
      "(streaming sum over {} MiB, blocks of {} runs {} KiB apart per thread, the fastest of {} "
      "runs here, same threads), and again after each row (read bw, the row's fraction's "
      "denominator).\n"
      "Decode rows time {} steps after {} warm-up step{}; tokens/s counts every sequence's token.\n"
      "Depth > 0: the KV of the first `depth` positions was filled with random values, not "
      "computed (attention reads the same bytes whatever their values).\n"
      "bytes/step = weights (file bytes) + the KV the step's tokens attend to; GB/s = bytes/step "
      "x steps/s.\n"
      "GMAC/s = the weight matrices' multiply-adds per token x tokens/s (attention's not "
      "counted), beside the f32 multiply-add peak of the same threads, {:.1f} G/s before the "
      "rows and measured again after each row (FMA peak); block-quantized weights multiply in "
      "int8 (VNNI) and can pass it.\n",
      r.model, r.threads, r.threads == 1 ? "" : "s", o.block_size, r.read_bw_gb_per_s,
      o.read_bw.bytes >> 20, r.read_bw_streams, (kReadBlockRunBytes >> 10), ReadStreamCountsText(),
      o.steps, o.warmup_steps, o.warmup_steps == 1 ? "" : "s", r.fma_peak_gmacs);
  if (o.rounds > 1) {
    s += fmt::format("Each row and prefill is the fastest of {} passes (with that pass's read bw).\n",
                     o.rounds);
  }
  for (const DecodeBenchRow& row : r.rows) {
    if (row.prefill_tokens > 0) {
      s += fmt::format(
          "prefill {:<5} {} tokens from an empty cache, chunks of {}: {:.1f} tokens/s, {:.1f} "
          "GMAC/s, {:.2f} of the FMA peak ({:.1f} G/s, measured after it)\n",
          KvDtypeName(row.kv_dtype), row.prefill_tokens, o.prefill_chunk, row.prefill_tokens_per_s,
          row.prefill_weight_gmacs_per_s, row.prefill_fraction_of_fma_peak,
          row.prefill_fma_peak_gmacs);
    }
  }
  s += "\n";
  s += fmt::format(
      "{:<8} {:>6} {:>5} {:>10} {:>9} {:>9} {:>11} {:>11} {:>8} {:>8} {:>10} {:>8} {:>9} {:>8}\n",
      "kv_dtype", "depth", "batch", "tokens/s", "per seq", "step ms", "weights MB", "KV MB/step",
      "GB/s", "read bw", "of read bw", "GMAC/s", "FMA peak", "of peak");
  for (const DecodeBenchRow& row : r.rows) {
    s += fmt::format(
        "{:<8} {:>6} {:>5} {:>10.1f} {:>9.1f} {:>9.2f} {:>11.1f} {:>11.1f} {:>8.2f} {:>8.1f} "
        "{:>10.2f} {:>8.1f} {:>9.1f} {:>8.2f}\n",
        KvDtypeName(row.kv_dtype), row.depth, row.batch, row.decode_tokens_per_s,
        row.decode_tokens_per_s / row.batch, row.step_ms, double(row.weight_bytes_per_step) / 1e6,
        double(row.kv_bytes_per_step) / 1e6, row.implied_gb_per_s, row.read_bw_gb_per_s,
        row.fraction_of_read_bw, row.weight_gmacs_per_s, row.fma_peak_gmacs,
        row.fraction_of_fma_peak);
  }
  // Each dtype's single-sequence tokens/s over f16's at the same depth.
  std::string ratios;
  for (const DecodeBenchRow& row : r.rows) {
    if (row.kv_dtype == KvDtype::kF16 || row.batch != 1) continue;
    for (const DecodeBenchRow& f16 : r.rows) {
      if (f16.kv_dtype == KvDtype::kF16 && f16.batch == 1 && f16.depth == row.depth) {
        ratios += fmt::format("  {} / f16 at depth {}: {:.2f}x\n", KvDtypeName(row.kv_dtype),
                              row.depth, row.decode_tokens_per_s / f16.decode_tokens_per_s);
      }
    }
  }
  if (!ratios.empty()) s += "\ndecode tokens/s over f16 KV (batch 1):\n" + ratios;
  return s;
}

// Fields of each row: model, threads, weight_kernel, attention_kernel, kv_dtype, depth, batch,
// steps, rounds, seconds, decode_tokens_per_s (all sequences), step_ms, kv_filled_randomly,
// prefill_tokens and prefill_tokens_per_s (only on the row that carries the prefill),
// weight_bytes_per_step, kv_bytes_per_step, bytes_per_step, implied_gb_per_s, read_bw_gb_per_s,
// read_bw_streams (the probe's runs per thread), fraction_of_read_bw, weight_macs_per_token,
// weight_gmacs_per_s, fma_peak_gmacs, fraction_of_fma_peak (and, with the prefill,
// prefill_weight_gmacs_per_s, prefill_fma_peak_gmacs, prefill_fraction_of_fma_peak).
std::string FormatDecodeBenchJson(const DecodeBenchResult& r) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const DecodeBenchRow& row : r.rows) {
    nlohmann::ordered_json j;
    j["model"] = r.model;
    j["threads"] = r.threads;
    j["weight_kernel"] = r.weight_kernel;
    j["attention_kernel"] = r.attention_kernel;
    j["kv_dtype"] = std::string(KvDtypeName(row.kv_dtype));
    j["depth"] = row.depth;
    j["batch"] = row.batch;
    j["steps"] = row.steps;
    j["rounds"] = r.options.rounds;
    j["seconds"] = row.seconds;
    j["decode_tokens_per_s"] = row.decode_tokens_per_s;
    j["step_ms"] = row.step_ms;
    j["kv_filled_randomly"] = row.kv_filled_randomly;
    if (row.prefill_tokens > 0) {
      j["prefill_tokens"] = row.prefill_tokens;
      j["prefill_tokens_per_s"] = row.prefill_tokens_per_s;
      j["prefill_weight_gmacs_per_s"] = row.prefill_weight_gmacs_per_s;
      j["prefill_fma_peak_gmacs"] = row.prefill_fma_peak_gmacs;
      j["prefill_fraction_of_fma_peak"] = row.prefill_fraction_of_fma_peak;
    }
    j["weight_bytes_per_step"] = row.weight_bytes_per_step;
    j["kv_bytes_per_step"] = row.kv_bytes_per_step;
    j["bytes_per_step"] = row.weight_bytes_per_step + row.kv_bytes_per_step;
    j["implied_gb_per_s"] = row.implied_gb_per_s;
    j["read_bw_gb_per_s"] = row.read_bw_gb_per_s;
    j["read_bw_streams"] = r.read_bw_streams;
    j["fraction_of_read_bw"] = row.fraction_of_read_bw;
    j["weight_macs_per_token"] = row.weight_macs_per_token;
    j["weight_gmacs_per_s"] = row.weight_gmacs_per_s;
    j["fma_peak_gmacs"] = row.fma_peak_gmacs;
    j["fraction_of_fma_peak"] = row.fraction_of_fma_peak;
    rows.push_back(std::move(j));
  }
  return rows.dump(2);
}

}  // namespace kvengine
