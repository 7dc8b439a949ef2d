// The test-side validator for the JSON schema keywords slimkv_grammar supports (grammar_helpers.h).
#include "grammar_helpers.h"

namespace slimkv::grammar::test {
namespace {

const ojson& resolve_ref(const ojson& root, const std::string& ref) {
  const ojson* t = &root;
  size_t pos = 2;
  while (ref != "#" && pos <= ref.size()) {
    size_t slash = ref.find('/', pos);
    t = &(*t)[ref.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos)];
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  return *t;
}

bool type_ok(const ojson& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "integer") return v.is_number_integer();
  if (t == "number") return v.is_number();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  return false;
}

bool object_valid(const ojson& v, const ojson& s, const ojson& root, std::string& why) {
  const ojson props = s.value("properties", ojson::object());
  for (const auto& r : s.value("required", ojson::array()))
    if (!v.contains(r.get<std::string>())) return why = "missing required " + r.dump(), false;
  std::vector<std::string> order;
  for (const auto& [k, _] : props.items()) order.push_back(k);
  size_t last = 0;
  for (const auto& [k, item] : v.items()) {
    auto it = std::find(order.begin(), order.end(), k);
    if (it != order.end()) {
      size_t idx = static_cast<size_t>(it - order.begin());
      if (idx < last) return why = "property out of schema order: " + k, false;
      last = idx;
      if (!schema_valid(item, props[k], root, why)) return false;
      continue;
    }
    const bool has_props = s.contains("properties");
    ojson ap = s.value("additionalProperties", ojson(!has_props));
    if (ap.is_boolean() && !ap.get<bool>()) return why = "extra property " + k, false;
    if (!schema_valid(item, ap, root, why)) return false;
  }
  return true;
}

}  // namespace

bool schema_valid(const ojson& v, const ojson& s, const ojson& root, std::string& why) {
  if (s.is_boolean()) return s.get<bool>();
  if (s.contains("$ref")) return schema_valid(v, resolve_ref(root, s["$ref"].get<std::string>()), root, why);
  if (s.contains("const")) return v == s["const"] || (why = "not the const " + s["const"].dump(), false);
  if (s.contains("enum")) {
    for (const auto& e : s["enum"])
      if (e == v) return true;
    return why = v.dump() + " not in enum", false;
  }
  for (const char* key : {"anyOf", "oneOf"})
    if (s.contains(key)) {
      for (const auto& alt : s[key])
        if (std::string w; schema_valid(v, alt, root, w)) return true;
      return why = v.dump() + " matches no " + key, false;
    }
  if (s.contains("allOf")) return schema_valid(v, s["allOf"][0], root, why);
  if (s.contains("type")) {
    bool any = false;
    for (const auto& t : s["type"].is_array() ? s["type"] : ojson::array({s["type"]})) any |= type_ok(v, t.get<std::string>());
    if (!any) return why = v.dump() + " is not of type " + s["type"].dump(), false;
  }
  if (v.is_object() && (s.contains("properties") || s.contains("additionalProperties") || s.value("type", "") == "object"))
    return object_valid(v, s, root, why);
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return why = "too few items", false;
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return why = "too many items", false;
    if (s.contains("items"))
      for (const auto& item : v)
        if (!schema_valid(item, s["items"], root, why)) return false;
  }
  if (v.is_string()) {
    const std::string str = v.get<std::string>();
    if (s.contains("minLength") && utf8_length(str) < s["minLength"].get<size_t>()) return why = "too short", false;
    if (s.contains("maxLength") && utf8_length(str) > s["maxLength"].get<size_t>()) return why = "too long", false;
    if (s.contains("pattern") && !std::regex_match(str, std::regex(s["pattern"].get<std::string>())))
      return why = str + " does not match the pattern", false;
    if (s.value("format", "") == "date" && !std::regex_match(str, std::regex(R"(\d{4}-\d\d-\d\d)")))
      return why = str + " is not a date", false;
    if (s.value("format", "") == "uuid" &&
        !std::regex_match(str, std::regex(R"([0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12})")))
      return why = str + " is not a uuid", false;
  }
  return true;
}

}  // namespace slimkv::grammar::test
