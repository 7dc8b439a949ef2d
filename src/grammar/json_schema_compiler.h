// JSON schema -> grammar (OpenAI response_format json_schema, vLLM guided_json) and "any JSON object"
// (response_format json_object). Supported keywords are listed in docs/grammar.md; any other (non-annotation)
// keyword is a GrammarError naming it and where it is. Owns: these entry points. Must not know: tokens, HTTP.
#pragma once
#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"

namespace slimkv::grammar {

// Properties come in the schema's order: keep it by passing an ordered_json (or the text); a nlohmann::json
// has already sorted its keys, so object properties follow alphabetical order.
std::shared_ptr<const Grammar> compile_json_schema(const nlohmann::ordered_json& schema);
std::shared_ptr<const Grammar> compile_json_schema(const nlohmann::json& schema);
std::shared_ptr<const Grammar> compile_json_schema_text(std::string_view schema_json);
std::shared_ptr<const Grammar> compile_any_json();  // any JSON object

}  // namespace slimkv::grammar
