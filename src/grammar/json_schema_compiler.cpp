#include "grammar/json_schema_compiler.h"

#include "core/bounded_json.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "grammar/choice_compiler.h"
#include "grammar/grammar_builder.h"
#include "grammar/grammar_error.h"
#include "grammar/json_rules.h"
#include "grammar/regex_compiler.h"

namespace slimkv::grammar {
namespace {

using ojson = nlohmann::ordered_json;

constexpr int kMaxSchemaNesting = 128;

const std::set<std::string>& known_keywords() {
  static const std::set<std::string> k = {
      "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "enum", "const",
      "anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions", "minLength", "maxLength", "pattern", "format",
      // annotations: no effect on the language
      "title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated", "readOnly",
      "writeOnly", "strict"};
  return k;
}

// A format as a regex over the string's content (RFC 3339 date / date-time, RFC 4122 uuid).
const std::map<std::string, std::string>& format_patterns() {
  static const std::map<std::string, std::string> f = {
      {"date", R"([0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01]))"},
      {"time", R"(([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))"},
      {"date-time", R"([0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9])"
                    R"((\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))"},
      {"uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"}};
  return f;
}

class SchemaCompiler {
 public:
  explicit SchemaCompiler(const ojson& root) : root_(root), json_(b_) {}

  std::shared_ptr<const Grammar> run() {
    uint32_t root = b_.declare("root");
    refs_["#"] = root;
    b_.define(root, {Seq{compile(root_, "#", 0)}});
    return b_.build(root);
  }

 private:
  [[noreturn]] static void fail_at(const std::string& path, const std::string& what) {
    grammar_fail("JSON schema at {}: {}", path, what);
  }

  Element compile(const ojson& s, const std::string& path, int depth) {
    if (depth > kMaxSchemaNesting) fail_at(path, "nested deeper than " + std::to_string(kMaxSchemaNesting));
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail_at(path, "schema 'false' matches nothing");
      return json_.value();
    }
    if (!s.is_object()) fail_at(path, "a schema must be an object or a boolean");
    for (const auto& [key, v] : s.items())
      if (!known_keywords().count(key)) fail_at(path, "unsupported keyword '" + key + "'");
    if (s.contains("$ref")) return reference(s["$ref"], path);
    if (s.contains("const")) return b_.rule(path, {b_.literal(s["const"].dump())});
    if (s.contains("enum")) return enumeration(s["enum"], path);
    if (s.contains("anyOf") || s.contains("oneOf")) {  // oneOf is compiled as anyOf (no exclusivity check)
      const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
      if (s.contains("anyOf") && s.contains("oneOf")) fail_at(path, "both anyOf and oneOf");
      return alternatives(s[key], path + "/" + key, depth);
    }
    if (s.contains("allOf")) {
      const ojson& all = s["allOf"];
      if (!all.is_array() || all.size() != 1) fail_at(path, "'allOf' is supported only with a single schema");
      return compile(all[0], path + "/allOf/0", depth + 1);
    }
    if (!s.contains("type")) return typed(s, infer_type(s), path, depth);
    const ojson& t = s["type"];
    if (t.is_string()) return typed(s, t.get<std::string>(), path, depth);
    if (!t.is_array() || t.empty()) fail_at(path, "'type' must be a string or a non-empty array");
    std::vector<Seq> alts;
    for (const ojson& one : t) {
      if (!one.is_string()) fail_at(path, "'type' entries must be strings");
      alts.push_back(Seq{typed(s, one.get<std::string>(), path, depth)});
    }
    return b_.rule(path, alts);
  }

  static std::string infer_type(const ojson& s) {
    if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required")) return "object";
    if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) return "array";
    if (s.contains("minLength") || s.contains("maxLength") || s.contains("pattern") || s.contains("format"))
      return "string";
    return "any";
  }

  Element typed(const ojson& s, const std::string& type, const std::string& path, int depth) {
    if (type == "object") return object(s, path, depth);
    if (type == "array") return array(s, path, depth);
    if (type == "string") return string(s, path);
    if (type == "integer") return json_.integer();
    if (type == "number") return json_.number();
    if (type == "boolean") return json_.boolean();
    if (type == "null") return json_.null();
    if (type == "any") return json_.value();
    fail_at(path, "unsupported type '" + type + "'");
  }

  Element reference(const ojson& ref, const std::string& path) {
    if (!ref.is_string()) fail_at(path, "'$ref' must be a string");
    const std::string r = ref.get<std::string>();
    if (auto it = refs_.find(r); it != refs_.end()) return GrammarBuilder::ref(it->second);
    if (r.rfind("#/", 0) != 0) fail_at(path, "only local '$ref's (#/$defs/..., #/definitions/...) are supported: '" + r + "'");
    const ojson* target = &root_;
    size_t pos = 2;
    while (pos <= r.size()) {
      size_t slash = r.find('/', pos);
      std::string part = r.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
      for (size_t k; (k = part.find("~1")) != std::string::npos;) part.replace(k, 2, "/");
      for (size_t k; (k = part.find("~0")) != std::string::npos;) part.replace(k, 2, "~");
      if (!target->is_object() || !target->contains(part)) fail_at(path, "'$ref' '" + r + "' points nowhere");
      target = &(*target)[part];
      if (slash == std::string::npos) break;
      pos = slash + 1;
    }
    uint32_t id = b_.declare(r);  // declared first: a recursive schema refers back to this rule
    refs_[r] = id;
    b_.define(id, {Seq{compile(*target, r, 0)}});
    return GrammarBuilder::ref(id);
  }

  Element enumeration(const ojson& values, const std::string& path) {
    if (!values.is_array() || values.empty()) fail_at(path, "'enum' must be a non-empty array");
    std::vector<std::string> texts;
    for (const ojson& v : values) texts.push_back(v.dump());
    return b_.rule(path + "/enum", {choice_seq(b_, texts)});  // a prefix tree: one parse however many values
  }

  Element alternatives(const ojson& list, const std::string& path, int depth) {
    if (!list.is_array() || list.empty()) fail_at(path, "must be a non-empty array of schemas");
    std::vector<Seq> alts;
    for (size_t i = 0; i < list.size(); ++i)
      alts.push_back(Seq{compile(list[i], path + "/" + std::to_string(i), depth + 1)});
    return b_.rule(path, alts);
  }

  static uint32_t count(const ojson& s, const char* key, uint32_t fallback, const std::string& path) {
    if (!s.contains(key)) return fallback;
    const ojson& v = s[key];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      fail_at(path, std::string("'") + key + "' must be a non-negative integer");
    uint64_t n = v.get<uint64_t>();
    if (n > kMaxRepeat) fail_at(path, std::string("'") + key + "' above " + std::to_string(kMaxRepeat) + " is not supported");
    return static_cast<uint32_t>(n);
  }

  Element string(const ojson& s, const std::string& path) {
    const bool has_len = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("pattern") || s.contains("format")) {
      if (has_len) fail_at(path, "'minLength'/'maxLength' together with 'pattern' or 'format' is not supported");
      if (s.contains("pattern") && s.contains("format")) fail_at(path, "both 'pattern' and 'format'");
      std::string pattern;
      if (s.contains("pattern")) {
        if (!s["pattern"].is_string()) fail_at(path, "'pattern' must be a string");
        pattern = s["pattern"].get<std::string>();
      } else {
        const std::string f = s["format"].is_string() ? s["format"].get<std::string>() : "";
        auto it = format_patterns().find(f);
        if (it == format_patterns().end()) fail_at(path, "unsupported format '" + f + "'");
        pattern = it->second;
      }
      return b_.rule(path, {seq(b_.byte('"'), regex_to_seq(b_, pattern, true), b_.byte('"'))});
    }
    if (!has_len) return json_.string();
    return b_.rule(path, {json_.string_length(count(s, "minLength", 0, path), count(s, "maxLength", kUnbounded, path))});
  }

  Element array(const ojson& s, const std::string& path, int depth) {
    Element item = s.contains("items") ? compile(s["items"], path + "/items", depth + 1) : json_.value();
    const uint32_t min = count(s, "minItems", 0, path), max = count(s, "maxItems", kUnbounded, path);
    if (max < min) fail_at(path, "'maxItems' below 'minItems'");
    const Element w = json_.ws();
    const Seq open = seq(b_.byte('['), w), close = seq(w, b_.byte(']'));
    std::vector<Seq> alts;
    if (min == 0) alts.push_back(seq(b_.byte('['), w, b_.byte(']')));
    if (max > 0) {
      Seq more = b_.repeat(seq(w, b_.byte(','), w, item), min == 0 ? 0 : min - 1,
                           max == kUnbounded ? kUnbounded : max - 1, path + "/items-more");
      alts.push_back(seq(open, item, more, close));
    }
    return b_.rule(path, alts);
  }

  Element object(const ojson& s, const std::string& path, int depth);

  ojson root_;
  GrammarBuilder b_;
  JsonRules json_;
  std::map<std::string, uint32_t> refs_;
};

// Properties in schema order, required ones always, optional ones possibly skipped, commas only between present
// ones: first(i) = the rest when nothing was written yet, after(i) = the rest after something was written (each
// starting with its comma). O(properties) rules. Extra keys (additionalProperties) may follow the listed ones.
Element SchemaCompiler::object(const ojson& s, const std::string& path, int depth) {
  const Element w = json_.ws();
  const ojson empty = ojson::object();
  const ojson& props = s.contains("properties") ? s["properties"] : empty;
  if (!props.is_object()) fail_at(path, "'properties' must be an object");
  std::set<std::string> required;
  if (s.contains("required")) {
    if (!s["required"].is_array()) fail_at(path, "'required' must be an array");
    for (const ojson& r : s["required"]) {
      if (!r.is_string() || !props.contains(r.get<std::string>()))
        fail_at(path, "required property " + r.dump() + " is not in 'properties'");
      required.insert(r.get<std::string>());
    }
  }
  // additionalProperties: absent = false when 'properties' is given, any value when it is not (a bare
  // {"type": "object"}); true = any value; a schema = values of that schema.
  std::optional<Element> extra_value;
  if (s.contains("additionalProperties")) {
    const ojson& ap = s["additionalProperties"];
    if (!(ap.is_boolean() && !ap.get<bool>())) extra_value = compile(ap, path + "/additionalProperties", depth + 1);
  } else if (!s.contains("properties")) {
    extra_value = json_.value();
  }
  std::vector<Seq> kvs;
  std::vector<bool> opt;
  std::vector<std::string> names;
  for (const auto& [key, sub] : props.items()) {
    names.push_back(key);
    Element value = compile(sub, path + "/properties/" + key, depth + 1);
    kvs.push_back(seq(b_.literal(ojson(key).dump()), w, b_.byte(':'), w, value));
    opt.push_back(!required.count(key));
  }
  const size_t n = kvs.size();
  std::vector<Seq> after_extra{Seq{}}, first_extra{Seq{}};
  if (extra_value) {
    Seq kv = seq(json_.string_except(names), w, b_.byte(':'), w, *extra_value);
    Element more = b_.star(seq(w, b_.byte(','), w, kv), path + "/extra");
    after_extra = {Seq{more}};
    first_extra = {seq(kv, more), Seq{}};
  }
  Element after = b_.rule(path + "/after" + std::to_string(n), after_extra);
  Element first = b_.rule(path + "/first" + std::to_string(n), first_extra);
  for (size_t i = n; i-- > 0;) {
    Seq with_comma = seq(w, b_.byte(','), w, kvs[i], after);
    Seq as_first = seq(kvs[i], after);
    std::vector<Seq> a{with_comma}, f{as_first};
    if (opt[i]) a.push_back(Seq{after}), f.push_back(Seq{first});
    after = b_.rule(path + "/after" + std::to_string(i), a);
    first = b_.rule(path + "/first" + std::to_string(i), f);
  }
  return b_.rule(path, {seq(b_.byte('{'), w, first, w, b_.byte('}'))});
}

}  // namespace

std::shared_ptr<const Grammar> compile_json_schema(const nlohmann::ordered_json& schema) {
  return SchemaCompiler(schema).run();
}

std::shared_ptr<const Grammar> compile_json_schema(const nlohmann::json& schema) {
  return compile_json_schema_text(schema.dump());
}

std::shared_ptr<const Grammar> compile_json_schema_text(std::string_view schema_json) {
  nlohmann::ordered_json schema;
  try {
    schema = parse_bounded_json(schema_json);  // linear (ordered_json's own parse is quadratic in an object's keys)
  } catch (const JsonTextError& e) {
    grammar_fail("JSON schema is {}", e.what());
  }
  return compile_json_schema(schema);
}

std::shared_ptr<const Grammar> compile_any_json() {
  GrammarBuilder b;
  JsonRules json(b);
  uint32_t root = b.declare("root");
  b.define(root, {Seq{json.object()}});
  return b.build(root);
}

}  // namespace slimkv::grammar
