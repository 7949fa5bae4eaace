#include "bench/serve/bench_workload.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace kvengine::loadgen {
namespace {

std::vector<int32_t> Head(const std::vector<int32_t>& v, size_t begin, int64_t cap) {
  size_t end = v.size();
  if (cap > 0) end = std::min(end, begin + size_t(cap));
  return std::vector<int32_t>(v.begin() + std::ptrdiff_t(std::min(begin, end)),
                              v.begin() + std::ptrdiff_t(end));
}

}  // namespace

std::vector<Conversation> ToConversations(const Workload& workload, const LengthCaps& caps) {
  std::vector<Conversation> out;
  // The uncapped prompt + output of the previous turn of the current conversation: where the
  // next turn's user message starts in its prompt.
  size_t history = 0;
  for (const SimRequest& r : workload.requests) {
    if (r.turn == 0) {
      out.emplace_back();
      history = 0;
    }
    Turn t;
    t.message = Head(r.prompt, r.turn == 0 ? 0 : history, caps.max_prompt_tokens);
    t.planned_output = Head(r.output, 0, caps.max_output_tokens);
    t.max_tokens = int64_t(t.planned_output.size());
    out.back().turns.push_back(std::move(t));
    history = r.prompt.size() + r.output.size();
  }
  return out;
}

int64_t CountTurns(const std::vector<Conversation>& conversations) {
  int64_t n = 0;
  for (const Conversation& c : conversations) n += int64_t(c.turns.size());
  return n;
}

std::vector<double> PoissonArrivals(int64_t n, double rate, uint64_t seed) {
  std::vector<double> t(size_t(std::max<int64_t>(n, 0)), 0.0);
  if (!(rate > 0) || std::isinf(rate)) return t;
  std::mt19937_64 engine(seed);
  double now = 0;
  for (size_t i = 1; i < t.size(); ++i) {
    const double u = double(engine() >> 11) * 0x1.0p-53;  // [0, 1)
    now += -std::log1p(-u) / rate;
    t[i] = now;
  }
  return t;
}

}  // namespace kvengine::loadgen
