#include "server/structured_output_request.h"

#include <fmt/format.h>

#include "server/api_error.h"

namespace slimkv {
namespace {

using ojson = nlohmann::ordered_json;
using Kind = StructuredOutput::Kind;

const ojson* output_field(const ojson& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// An object, or a string holding one (vLLM accepts both).
ojson schema_value(const ojson& v, const char* name, const JsonLimits& limits) {
  if (v.is_object()) return v;
  if (v.is_string()) {
    ojson parsed;
    try {
      parsed = parse_bounded_json(v.get_ref<const std::string&>(), limits);
    } catch (const JsonTextError& e) {
      if (!e.limit.empty()) throw invalid_request(fmt::format("'{}' (a JSON text): {}", name, e.what()), name);
    }
    if (parsed.is_object()) return parsed;
  }
  throw invalid_request(fmt::format("'{}' must be a JSON schema object (or a string holding one)", name), name);
}

std::vector<std::string> choice_list(const ojson& v, const char* name) {
  if (!v.is_array() || v.empty()) throw invalid_request(fmt::format("'{}' must be a non-empty array of strings", name), name);
  std::vector<std::string> out;
  for (const ojson& c : v) {
    if (!c.is_string() || c.get<std::string>().empty()) {
      throw invalid_request(fmt::format("'{}' must hold non-empty strings", name), name);
    }
    out.push_back(c.get<std::string>());
  }
  return out;
}

StructuredOutput from_response_format(const ojson& rf, const JsonLimits& limits) {
  StructuredOutput s;
  s.field = "response_format";
  const ojson* type = rf.is_object() ? output_field(rf, "type") : nullptr;
  if (!type || !type->is_string()) {
    throw invalid_request("'response_format' must be {\"type\": \"text\" | \"json_object\" | \"json_schema\"}",
                          "response_format");
  }
  const std::string t = type->get<std::string>();
  if (t == "text") return s;
  if (t == "json_object") {
    s.kind = Kind::kJsonObject;
    return s;
  }
  if (t != "json_schema") {
    throw invalid_request(fmt::format("'response_format' type '{}' is not one of text, json_object, json_schema", t),
                          "response_format");
  }
  const ojson* js = output_field(rf, "json_schema");
  const ojson* schema = js && js->is_object() ? output_field(*js, "schema") : nullptr;
  if (!schema) throw invalid_request("'response_format' json_schema needs {\"json_schema\": {\"schema\": {...}}}",
                                     "response_format");
  s.kind = Kind::kJsonSchema;
  s.schema = schema_value(*schema, "response_format", limits);
  return s;
}

}  // namespace

StructuredOutput parse_structured_output(const ojson& body, const JsonLimits& limits) {
  std::vector<StructuredOutput> found;
  if (const ojson* rf = output_field(body, "response_format")) {
    StructuredOutput s = from_response_format(*rf, limits);
    if (s.kind != Kind::kNone) found.push_back(std::move(s));
  }
  auto add = [&](const ojson* v, const char* name, Kind kind) {
    if (!v) return;
    StructuredOutput s;
    s.kind = kind;
    s.field = name;
    if (kind == Kind::kJsonSchema) s.schema = schema_value(*v, name, limits);
    if (kind == Kind::kRegex) {
      if (!v->is_string() || v->get<std::string>().empty()) {
        throw invalid_request(fmt::format("'{}' must be a non-empty string", name), name);
      }
      s.regex = v->get<std::string>();
    }
    if (kind == Kind::kChoice) s.choices = choice_list(*v, name);
    found.push_back(std::move(s));
  };
  add(output_field(body, "guided_json"), "guided_json", Kind::kJsonSchema);
  add(output_field(body, "guided_regex"), "guided_regex", Kind::kRegex);
  add(output_field(body, "guided_choice"), "guided_choice", Kind::kChoice);
  if (const ojson* so = output_field(body, "structured_outputs")) {
    if (!so->is_object()) throw invalid_request("'structured_outputs' must be an object", "structured_outputs");
    for (auto it = so->begin(); it != so->end(); ++it) {
      if (it.value().is_null()) continue;
      const std::string& k = it.key();
      if (k == "json") add(&it.value(), "structured_outputs", Kind::kJsonSchema);
      else if (k == "regex") add(&it.value(), "structured_outputs", Kind::kRegex);
      else if (k == "choice") add(&it.value(), "structured_outputs", Kind::kChoice);
      else throw invalid_request(fmt::format("'structured_outputs' key '{}' is not supported (json, regex, choice)", k),
                                 "structured_outputs");
    }
  }
  if (found.size() > 1) {
    throw invalid_request(fmt::format("give one output constraint, not '{}' and '{}'", found[0].field, found[1].field),
                          found[1].field.c_str());
  }
  return found.empty() ? StructuredOutput{} : std::move(found[0]);
}

}  // namespace slimkv
