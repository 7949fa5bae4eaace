#include "demo/demo_workload.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "demo/demo_text.h"

namespace kvengine::demo {
namespace {

int ScaleOne(int value, double factor) {
  return std::max(1, static_cast<int>(std::lround(value * factor)));
}

// Request `index` of `scenario`: `prefix` then `suffix`, arriving as `arrival` after request
// `after`.
DemoRequest PrefixedRequest(Scenario scenario, int index, const std::vector<int32_t>& prefix,
                            const std::vector<int32_t>& suffix, Arrival arrival, int after,
                            int64_t max_tokens) {
  DemoRequest r;
  r.scenario = scenario;
  r.index = index;
  r.tokens = prefix;
  r.tokens.insert(r.tokens.end(), suffix.begin(), suffix.end());
  r.arrival = arrival;
  r.after = after;
  r.max_tokens = max_tokens;
  r.prompt_tokens = static_cast<int64_t>(r.tokens.size());
  return r;
}

}  // namespace

std::string_view ScenarioName(Scenario scenario) {
  switch (scenario) {
    case Scenario::kSharedSystemPrompt:
      return "shared system prompt";
    case Scenario::kMultiTurnChat:
      return "multi-turn chat";
    case Scenario::kLongDocument:
      return "long document";
  }
  return "?";
}

std::string_view ScenarioKey(Scenario scenario) {
  switch (scenario) {
    case Scenario::kSharedSystemPrompt:
      return "shared_system_prompt";
    case Scenario::kMultiTurnChat:
      return "multi_turn_chat";
    case Scenario::kLongDocument:
      return "long_document";
  }
  return "?";
}

WorkloadOptions WorkloadOptions::LengthsScaled(double factor) const {
  WorkloadOptions o = *this;
  o.system_prompt_tokens = ScaleOne(system_prompt_tokens, factor);
  o.question_tokens = ScaleOne(question_tokens, factor);
  o.chat_message_tokens = ScaleOne(chat_message_tokens, factor);
  o.document_tokens = ScaleOne(document_tokens, factor);
  o.max_tokens = ScaleOne(max_tokens, factor);
  return o;
}

WorkloadOptions WorkloadOptions::Scaled(double factor) const {
  WorkloadOptions o = LengthsScaled(factor);
  o.users = ScaleOne(users, factor);
  o.chat_turns = ScaleOne(chat_turns, factor);
  o.document_questions = ScaleOne(document_questions, factor);
  return o;
}

int64_t WorkloadOptions::LongestRequest() const {
  const int64_t out = max_tokens;
  const int64_t shared = int64_t{system_prompt_tokens} + question_tokens + out;
  // The last turn holds every message and every earlier turn's output, then its own output.
  const int64_t chat = int64_t{chat_turns} * (chat_message_tokens + out);
  const int64_t document = int64_t{document_tokens} + question_tokens + out;
  return std::max({shared, chat, document});
}

Status WorkloadOptions::Validate() const {
  struct Field {
    const char* name;
    int value;
  };
  // Each bound keeps a run of the demo within minutes on a laptop and every count in int.
  constexpr int kMaxCount = 4096;
  constexpr int kMaxLength = 1 << 20;
  for (const Field& f : {Field{"users", users}, Field{"chat_turns", chat_turns},
                         Field{"document_questions", document_questions}}) {
    if (f.value < 1 || f.value > kMaxCount) {
      return InvalidArgument(std::string("demo workload: ") + f.name + " must be 1.." +
                             std::to_string(kMaxCount) + ", got " + std::to_string(f.value));
    }
  }
  for (const Field& f :
       {Field{"system_prompt_tokens", system_prompt_tokens},
        Field{"question_tokens", question_tokens},
        Field{"chat_message_tokens", chat_message_tokens},
        Field{"document_tokens", document_tokens}, Field{"max_tokens", max_tokens}}) {
    if (f.value < 1 || f.value > kMaxLength) {
      return InvalidArgument(std::string("demo workload: ") + f.name + " must be 1.." +
                             std::to_string(kMaxLength) + ", got " + std::to_string(f.value));
    }
  }
  return Status::Ok();
}

Result<WorkloadOptions> FitToContext(const WorkloadOptions& options, int64_t max_model_len) {
  if (options.LongestRequest() <= max_model_len) return options;
  const WorkloadOptions shortest = options.LengthsScaled(0);
  if (shortest.LongestRequest() > max_model_len) {
    return OutOfRange("the demo workload needs a context of at least " +
                      std::to_string(shortest.LongestRequest()) + " tokens, the model has " +
                      std::to_string(max_model_len) + " (set -c)");
  }
  // LongestRequest() grows with the factor: bisect for the largest factor that fits.
  double lo = 0, hi = 1;  // Invariant: lo fits, hi does not.
  for (int i = 0; i < 40; ++i) {
    const double mid = (lo + hi) / 2;
    (options.LengthsScaled(mid).LongestRequest() <= max_model_len ? lo : hi) = mid;
  }
  return options.LengthsScaled(lo);
}

int64_t Workload::TotalPromptTokens() const {
  int64_t n = 0;
  for (const DemoRequest& r : requests) n += r.prompt_tokens;
  return n;
}

int64_t Workload::TotalOutputTokens() const {
  int64_t n = 0;
  for (const DemoRequest& r : requests) n += r.max_tokens;
  return n;
}

int64_t Workload::LongestRequest() const {
  int64_t n = 0;
  for (const DemoRequest& r : requests) n = std::max(n, r.prompt_tokens + r.max_tokens);
  return n;
}

int Workload::CountOf(Scenario scenario) const {
  return static_cast<int>(
      std::count_if(requests.begin(), requests.end(),
                    [&](const DemoRequest& r) { return r.scenario == scenario; }));
}

std::vector<int32_t> Workload::Prompt(size_t i, std::span<const std::vector<int32_t>> prompts,
                                      std::span<const std::vector<int32_t>> outputs) const {
  const DemoRequest& r = requests[i];
  std::vector<int32_t> p;
  if (r.history >= 0) {
    const size_t h = static_cast<size_t>(r.history);
    KV_CHECK(h < i && h < prompts.size() && h < outputs.size());
    p = prompts[h];
    p.insert(p.end(), outputs[h].begin(), outputs[h].end());
  }
  p.insert(p.end(), r.tokens.begin(), r.tokens.end());
  return p;
}

std::vector<int32_t> TokensOfLength(const Tokenizer& tokenizer, std::string_view header,
                                    std::span<const std::string_view> texts, size_t first, int n,
                                    bool bos) {
  KV_CHECK(!texts.empty());
  std::vector<int32_t> ids;
  if (bos && tokenizer.add_bos() && tokenizer.bos() >= 0) ids.push_back(tokenizer.bos());
  if (!header.empty()) {
    const std::vector<int32_t> h = tokenizer.Encode(header, /*add_special=*/false);
    ids.insert(ids.end(), h.begin(), h.end());
  }
  for (size_t k = first; ids.size() < size_t(n); ++k) {
    std::string text(texts[k % texts.size()]);
    text.insert(0, "\n");
    const std::vector<int32_t> t = tokenizer.Encode(text, /*add_special=*/false);
    KV_CHECK(!t.empty()) << "text encodes to no token";
    ids.insert(ids.end(), t.begin(), t.end());
  }
  ids.resize(size_t(n));
  return ids;
}

Result<Workload> BuildWorkload(const Tokenizer& tokenizer, const WorkloadOptions& options) {
  KV_RETURN_IF_ERROR(options.Validate());
  Workload w;
  w.options = options;
  const WorkloadOptions& o = options;

  // Shared system prompt: user 0 first, the rest once the system prompt is cached.
  const std::vector<int32_t> system =
      TokensOfLength(tokenizer, "System:", SystemPromptParagraphs(), 0, o.system_prompt_tokens,
                     /*bos=*/true);
  const int first_user = static_cast<int>(w.requests.size());
  for (int u = 0; u < o.users; ++u) {
    const std::vector<int32_t> q =
        TokensOfLength(tokenizer, "\n\nCustomer " + std::to_string(u + 1) + ":", UserQuestions(),
                       size_t(u), o.question_tokens, /*bos=*/false);
    w.requests.push_back(PrefixedRequest(Scenario::kSharedSystemPrompt, u, system, q,
                                         u == 0 ? Arrival::kAtStart : Arrival::kAfterFirstToken,
                                         u == 0 ? -1 : first_user, o.max_tokens));
  }

  // Multi-turn chat: each turn extends the previous turn's prompt and output.
  for (int t = 0; t < o.chat_turns; ++t) {
    DemoRequest r;
    r.scenario = Scenario::kMultiTurnChat;
    r.index = t;
    r.tokens = TokensOfLength(tokenizer, "\n\nUser:", ChatMessages(), size_t(t),
                              o.chat_message_tokens, /*bos=*/t == 0);
    r.max_tokens = o.max_tokens;
    r.prompt_tokens = static_cast<int64_t>(r.tokens.size());
    if (t > 0) {
      const int prev = static_cast<int>(w.requests.size()) - 1;
      r.history = prev;
      r.arrival = Arrival::kAfterFinish;
      r.after = prev;
      r.prompt_tokens +=
          w.requests[size_t(prev)].prompt_tokens + w.requests[size_t(prev)].max_tokens;
    }
    w.requests.push_back(std::move(r));
  }

  // Long document: question 0 arrives with the users above (after them, first come first
  // served, so its long prefill does not hold them up), the rest once the document is cached.
  const std::vector<int32_t> document =
      TokensOfLength(tokenizer, "Document:", DocumentParagraphs(), 0, o.document_tokens,
                     /*bos=*/true);
  const int first_question = static_cast<int>(w.requests.size());
  for (int q = 0; q < o.document_questions; ++q) {
    const std::vector<int32_t> question =
        TokensOfLength(tokenizer, "\n\nQuestion " + std::to_string(q + 1) + ":",
                       DocumentQuestions(), size_t(q), o.question_tokens, /*bos=*/false);
    w.requests.push_back(PrefixedRequest(Scenario::kLongDocument, q, document, question,
                                         Arrival::kAfterFirstToken,
                                         q == 0 ? first_user : first_question, o.max_tokens));
  }
  return w;
}

}  // namespace kvengine::demo
