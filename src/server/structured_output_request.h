// What a request asks its output to match, validated into plain data: OpenAI's response_format (json_object,
// json_schema) and vLLM's guided_json / guided_regex / guided_choice (and structured_outputs {json, regex, choice}).
// Must not know: how the constraint is compiled or enforced (grammar/), tokenizers or templates.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/bounded_json.h"

namespace slimkv {

struct StructuredOutput {
  enum class Kind { kNone, kJsonObject, kJsonSchema, kRegex, kChoice } kind = Kind::kNone;
  nlohmann::ordered_json schema;       // kJsonSchema
  std::string regex;                   // kRegex
  std::vector<std::string> choices;    // kChoice
  std::string field;                   // the request field it came from (for error messages)
};

// Throws ApiError (400) naming the field; two constraints at once is an error. A schema given as a string is parsed
// under `limits` (the body's own caps).
StructuredOutput parse_structured_output(const nlohmann::ordered_json& body, const JsonLimits& limits = JsonLimits{});

}  // namespace slimkv
