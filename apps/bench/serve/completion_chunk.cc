#include "bench/serve/completion_chunk.h"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

namespace kvengine::loadgen {
namespace {

using nlohmann::json;

CompletionChunk Error(std::string message) {
  CompletionChunk c;
  c.kind = CompletionChunk::Kind::kError;
  c.error = std::move(message);
  return c;
}

// A non-negative integer field, or -1 when absent, null or of another type.
int64_t Count(const json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end() || !it->is_number_integer()) return -1;
  if (it->is_number_unsigned()) {
    return it->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())
               ? -1
               : int64_t(it->get<uint64_t>());
  }
  return std::max<int64_t>(-1, it->get<int64_t>());
}

UsageInfo ReadUsage(const json& u) {
  UsageInfo info;
  info.prompt_tokens = Count(u, "prompt_tokens");
  info.completion_tokens = Count(u, "completion_tokens");
  auto details = u.find("prompt_tokens_details");
  if (details != u.end() && details->is_object()) {
    info.cached_tokens = Count(*details, "cached_tokens");
  }
  return info;
}

// {"error": {"message": ...}} or {"error": "text"}.
std::string ErrorMessage(const json& e) {
  if (e.is_string()) return e.get<std::string>();
  if (e.is_object()) {
    auto m = e.find("message");
    if (m != e.end() && m->is_string()) return m->get<std::string>();
  }
  return "the server reported an error: " + e.dump();
}

// Reads choices[0]: its token ids (all of them must be int32 ids) or whether it has text.
bool ReadChoice(const json& choice, CompletionChunk* out) {
  if (!choice.is_object()) return false;
  auto ids = choice.find("token_ids");
  if (ids != choice.end() && !ids->is_null()) {
    if (!ids->is_array()) return false;
    for (const json& id : *ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
          id.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
        return false;
      }
      out->token_ids.push_back(id.get<int32_t>());
    }
    out->tokens = int64_t(out->token_ids.size());
    return true;
  }
  auto text = choice.find("text");
  if (text != choice.end() && !text->is_null() && !text->is_string()) return false;
  out->tokens =
      text != choice.end() && text->is_string() && !text->get_ref<const std::string&>().empty() ? 1
                                                                                                : 0;
  return true;
}

}  // namespace

CompletionChunk ParseCompletionChunk(std::string_view data) {
  if (data == "[DONE]") {
    CompletionChunk c;
    c.kind = CompletionChunk::Kind::kDone;
    return c;
  }
  const json j = json::parse(data, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Error("the stream sent an event that is not a JSON object: " +
                 std::string(data.substr(0, 200)));
  }
  if (auto e = j.find("error"); e != j.end() && !e->is_null()) return Error(ErrorMessage(*e));
  CompletionChunk c;
  auto choices = j.find("choices");
  if (choices != j.end() && !choices->is_null()) {
    if (!choices->is_array()) return Error("the stream sent a chunk whose choices is not an array");
    if (!choices->empty() && !ReadChoice((*choices)[0], &c)) {
      return Error("the stream sent a chunk with a malformed choice: " +
                   std::string(data.substr(0, 200)));
    }
  }
  auto usage = j.find("usage");
  if (usage != j.end() && usage->is_object()) c.usage = ReadUsage(*usage);
  return c;
}

}  // namespace kvengine::loadgen
