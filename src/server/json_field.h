// A request body's field as the OpenAI, Anthropic and Responses APIs read it: absent and null are the same.
// Shared by the request parsers (openai_request, anthropic_request, responses_request). Must not know: the APIs.
#pragma once
#include <nlohmann/json.hpp>

namespace slimkv {

// The field, or nullptr when it is absent or null (o an object).
inline const nlohmann::ordered_json* json_field(const nlohmann::ordered_json& o, const char* key) {
  auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace slimkv
