// GET /health, GET /v1/models, GET /metrics, POST /tokenize, POST /detokenize.
#include <httplib.h>

#include <chrono>

#include <fmt/format.h>

#include "server/json_fields.h"
#include "server/metrics.h"
#include "server/prompt_build.h"
#include "server/server_state.h"
#include "tokenizer/utf8.h"

namespace kvengine::server {
namespace {

using nlohmann::json;

// The model, or a 503 written to `res` (loading).
const ServedModel* ModelOr503(const ServerState& state, httplib::Response& res) {
  const ServedModel* m = state.model();
  if (m == nullptr) ReplyError(res, Unavailable503("the model is still loading", 5));
  return m;
}

void Health(const ServerState& state, httplib::Response& res) {
  switch (state.phase()) {
    case Phase::kLoading:
      res.set_header("Retry-After", "5");
      return ReplyJson(res, 503, {{"status", "loading"}});
    case Phase::kDraining:
      return ReplyJson(res, 503, {{"status", "draining"}});
    case Phase::kReady:
      return ReplyJson(res, 200, {{"status", "ok"}});
  }
}

// vLLM's model entry (with max_model_len) plus vocab_size, so that a load client such as
// `kvengine bench-serve` can send token-id prompts the model accepts.
void Models(const ServerState& state, httplib::Response& res) {
  const ServedModel* m = ModelOr503(state, res);
  if (m == nullptr) return;
  json model = {{"id", m->name},
                {"object", "model"},
                {"created", 0},
                {"owned_by", "kvengine"},
                {"max_model_len", m->max_model_len},
                {"vocab_size", m->tokenizer->vocab_size()}};
  ReplyJson(res, 200, {{"object", "list"}, {"data", json::array({model})}});
}

void Metrics(const ServerState& state, httplib::Response& res) {
  const ServedModel* m = state.model();
  std::string text;
  if (m != nullptr) {
    const EngineStats stats = m->backend->Stats();
    text = FormatMetrics(&stats, m->name, state.responses());
  } else {
    text = FormatMetrics(nullptr, "", state.responses());
  }
  res.status = 200;
  res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
}

// {"prompt": "text", "add_special_tokens": true} or {"messages": [...]} ->
// {"count", "max_model_len", "tokens"} (vLLM's shape).
void Tokenize(const ServerState& state, const httplib::Request& req, httplib::Response& res) {
  const ServedModel* m = ModelOr503(state, res);
  if (m == nullptr) return;
  json body;
  if (auto err = ParseJsonObject(req.body, &body)) return ReplyError(res, *err);
  std::vector<int32_t> tokens;
  if (body.contains("messages")) {
    GenerationRequest gr;
    if (auto err = ParseGenerationRequest(Endpoint::kChat, req.body, state.limits(), &gr)) {
      return ReplyError(res, *err);
    }
    tokens = TokenizeChat(*m->tokenizer, m->chat_template, gr.messages);
  } else {
    JsonFields f(body);
    std::string prompt;
    bool add_special = true;
    if (f.Find("prompt") == nullptr) f.Fail("prompt", "prompt (or messages) is required");
    f.String("prompt", std::string::npos, &prompt);
    f.Bool("add_special_tokens", &add_special);
    if (f.error()) return ReplyError(res, *f.error());
    tokens = m->tokenizer->Encode(prompt, add_special);
  }
  ReplyJson(res, 200,
            {{"count", tokens.size()}, {"max_model_len", m->max_model_len}, {"tokens", tokens}});
}

// {"tokens": [ids]} -> {"prompt": "text"}; ids outside the vocabulary are a 400.
void Detokenize(const ServerState& state, const httplib::Request& req, httplib::Response& res) {
  const ServedModel* m = ModelOr503(state, res);
  if (m == nullptr) return;
  json body;
  if (auto err = ParseJsonObject(req.body, &body)) return ReplyError(res, *err);
  auto it = body.find("tokens");
  if (it == body.end() || !it->is_array()) {
    return ReplyError(res, BadRequest("tokens", "tokens must be an array of token ids"));
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& id = (*it)[i];
    if (!id.is_number_integer() || (!id.is_number_unsigned() && id.get<int64_t>() < 0) ||
        id.get<uint64_t>() >= uint64_t(m->tokenizer->vocab_size())) {
      return ReplyError(
          res, BadRequest("tokens", fmt::format("tokens[{}] = {} is not a token id "
                                                "of this model (vocabulary {})",
                                                i, id.dump(), m->tokenizer->vocab_size())));
    }
    ids.push_back(id.get<int32_t>());
  }
  ReplyJson(res, 200, {{"prompt", SanitizeUtf8(m->tokenizer->Decode(ids))}});
}

}  // namespace

void RegisterInfoRoutes(httplib::Server& http, ServerState& state) {
  http.Get("/health",
           [&state](const httplib::Request&, httplib::Response& res) { Health(state, res); });
  http.Get("/v1/models",
           [&state](const httplib::Request&, httplib::Response& res) { Models(state, res); });
  http.Get("/metrics",
           [&state](const httplib::Request&, httplib::Response& res) { Metrics(state, res); });
  http.Post("/tokenize", [&state](const httplib::Request& req, httplib::Response& res) {
    Tokenize(state, req, res);
  });
  http.Post("/detokenize", [&state](const httplib::Request& req, httplib::Response& res) {
    Detokenize(state, req, res);
  });
}

}  // namespace kvengine::server
