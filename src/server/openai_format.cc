#include "server/openai_format.h"

#include <chrono>

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/prompt_build.h"

namespace kvengine::server {
namespace {

using nlohmann::json;

json FinishJson(const std::string& reason) { return reason.empty() ? json(nullptr) : json(reason); }

json ObjectBase(const ResponseMeta& meta, std::string_view object) {
  json j = json::object();
  j["id"] = meta.id;
  j["object"] = object;
  j["created"] = meta.created;
  j["model"] = meta.model;
  return j;
}

json ChatTokenJson(const TokenText& t, float logprob) {
  json j = json::object();
  j["token"] = t.text;
  j["logprob"] = logprob;
  j["bytes"] = t.bytes;
  return j;
}

// return_token_ids: the prompt's ids go on the choice (completions) or on the object (chat).
void AddPromptTokenIds(const ResponseMeta& meta, json* object, json* choice) {
  json& target = meta.endpoint == Endpoint::kChat ? *object : *choice;
  target["prompt_token_ids"] = meta.prompt_token_ids;
}

}  // namespace

ResponseMeta NewResponseMeta(Endpoint endpoint, std::string model, bool logprobs) {
  ResponseMeta m;
  m.endpoint = endpoint;
  m.id = fmt::format("{}-{:016x}", endpoint == Endpoint::kChat ? "chatcmpl" : "cmpl", RandomSeed());
  m.created = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  m.model = std::move(model);
  m.logprobs = logprobs;
  return m;
}

json UsageJson(const Usage& u) {
  json j = json::object();
  j["prompt_tokens"] = u.prompt_tokens;
  j["completion_tokens"] = u.completion_tokens;
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  j["prompt_tokens_details"] = {{"cached_tokens", u.cached_tokens}};
  return j;
}

json LogprobsJson(Endpoint endpoint, const std::vector<LogprobEntry>& entries) {
  if (endpoint == Endpoint::kChat) {
    json content = json::array();
    for (const LogprobEntry& e : entries) {
      json t = ChatTokenJson(e.token, e.logprob);
      json top = json::array();
      for (const LogprobEntry::Alternative& a : e.top) {
        top.push_back(ChatTokenJson(a.token, a.logprob));
      }
      t["top_logprobs"] = std::move(top);
      content.push_back(std::move(t));
    }
    return {{"content", std::move(content)}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       offsets = json::array();
  for (const LogprobEntry& e : entries) {
    tokens.push_back(e.token.text);
    token_logprobs.push_back(e.logprob);
    json alts = json::object();
    for (const LogprobEntry::Alternative& a : e.top) {
      // Distinct tokens may share a text (byte tokens of a split character): keep the best.
      if (!alts.contains(a.token.text)) alts[a.token.text] = a.logprob;
    }
    top.push_back(std::move(alts));
    offsets.push_back(e.text_offset);
  }
  json j = json::object();
  j["tokens"] = std::move(tokens);
  j["token_logprobs"] = std::move(token_logprobs);
  j["top_logprobs"] = std::move(top);
  j["text_offset"] = std::move(offsets);
  return j;
}

json ResponseJson(const ResponseMeta& meta, const std::vector<ChoiceDelta>& choices,
                  const Usage& usage) {
  const bool chat = meta.endpoint == Endpoint::kChat;
  json j = ObjectBase(meta, chat ? "chat.completion" : "text_completion");
  json arr = json::array();
  for (const ChoiceDelta& c : choices) {
    json choice = json::object();
    choice["index"] = c.index;
    if (chat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    } else {
      choice["text"] = c.text;
    }
    choice["logprobs"] = meta.logprobs ? LogprobsJson(meta.endpoint, c.logprobs) : json(nullptr);
    choice["finish_reason"] = FinishJson(c.finish_reason);
    if (meta.token_ids) {
      AddPromptTokenIds(meta, &j, &choice);
      choice["token_ids"] = c.token_ids;
    }
    arr.push_back(std::move(choice));
  }
  j["choices"] = std::move(arr);
  j["usage"] = UsageJson(usage);
  return j;
}

json ChunkJson(const ResponseMeta& meta, const ChoiceDelta& delta, bool first, bool include_usage) {
  const bool chat = meta.endpoint == Endpoint::kChat;
  json j = ObjectBase(meta, chat ? "chat.completion.chunk" : "text_completion");
  json choice = json::object();
  choice["index"] = delta.index;
  if (chat) {
    json d = json::object();
    if (first) d["role"] = "assistant";
    if (!delta.text.empty() || first) d["content"] = delta.text;
    choice["delta"] = std::move(d);
  } else {
    choice["text"] = delta.text;
  }
  choice["logprobs"] = meta.logprobs && !delta.logprobs.empty()
                           ? LogprobsJson(meta.endpoint, delta.logprobs)
                           : json(nullptr);
  choice["finish_reason"] = FinishJson(delta.finish_reason);
  if (meta.token_ids) {
    if (first) AddPromptTokenIds(meta, &j, &choice);
    choice["token_ids"] = delta.token_ids;
  }
  j["choices"] = json::array({std::move(choice)});
  if (include_usage) j["usage"] = nullptr;
  return j;
}

json UsageChunkJson(const ResponseMeta& meta, const Usage& usage) {
  json j = ObjectBase(
      meta, meta.endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = json::array();
  j["usage"] = UsageJson(usage);
  return j;
}

std::string SseEvent(const json& j) { return "data: " + DumpJson(j) + "\n\n"; }

void AppendDelta(const ChoiceDelta& delta, ChoiceDelta* acc) {
  acc->index = delta.index;
  acc->text += delta.text;
  acc->logprobs.insert(acc->logprobs.end(), delta.logprobs.begin(), delta.logprobs.end());
  acc->token_ids.insert(acc->token_ids.end(), delta.token_ids.begin(), delta.token_ids.end());
  if (!delta.finish_reason.empty()) acc->finish_reason = delta.finish_reason;
}

}  // namespace kvengine::server
