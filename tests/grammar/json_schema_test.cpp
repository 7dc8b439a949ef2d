// compile_json_schema / compile_any_json: texts a schema allows match fully, others are rejected; unsupported
// keywords are GrammarErrors naming the keyword.
#include "grammar_helpers.h"

namespace slimkv::grammar::test {
namespace {

struct SchemaCase {
  const char* schema;
  std::vector<std::string> yes, no;
};

TEST(GrammarJsonSchema, AcceptsAndRejects) {
  const std::vector<SchemaCase> cases = {
      {R"({"type":"integer"})", {"0", "-12", "1234567890123456"}, {"01", "1.5", "-", "+1", "12345678901234567", "1e3"}},
      {R"({"type":"number"})", {"0", "-1.25", "3e10", "2.5E-3"}, {".5", "1.", "1e", "--1", "1e100"}},
      {R"({"type":"boolean"})", {"true", "false"}, {"True", "1"}},
      {R"({"type":"null"})", {"null"}, {"nul", "None"}},
      {R"({"type":"string"})", {R"("")", R"("a b")", R"("\"\\\n\u00e9")", "\"\xc3\xa9\xe4\xb8\xad\""},
       {R"("a)", "\"a\nb\"", R"("\x")", R"("\u12")", "\"\xff\"", "\"\xed\xa0\x80\"", "\"\xc0\xaf\""}},
      {R"({"type":"string","minLength":2,"maxLength":3})", {R"("ab")", R"("a\nb")", "\"\xc3\xa9\xc3\xa9\""},
       {R"("a")", R"("abcd")"}},
      {R"({"type":"string","pattern":"^[A-Z]{2}\\d$"})", {R"("AB1")"}, {R"("ab1")", R"("AB12")"}},
      {R"({"type":"string","format":"date"})", {R"("2024-02-29")"}, {R"("2024-13-01")", R"("24-01-01")"}},
      {R"({"type":"string","format":"date-time"})", {R"("2024-02-29T12:30:00Z")", R"("2024-02-29T12:30:00.5+01:00")"},
       {R"("2024-02-29 12:30:00")"}},
      {R"({"type":"string","format":"uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"}, {R"("123e4567")"}},
      {R"({"enum":["a",1,null,{"x":[true]}]})", {R"("a")", "1", "null", R"({"x":[true]})"}, {R"("b")", "2"}},
      {R"({"const":"fixed"})", {R"("fixed")"}, {R"("other")"}},
      {R"({"type":["string","null"]})", {R"("s")", "null"}, {"1"}},
      {R"({"anyOf":[{"type":"integer"},{"type":"boolean"}]})", {"5", "true"}, {R"("5")"}},
      {R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})", {"[1]", "[1, 2,3]", "[ 1 ]"},
       {"[]", "[1,2,3,4]", "[1,]", R"(["a"])"}},
      {R"({"type":"array","maxItems":0})", {"[]", "[ ]"}, {"[1]"}},
      {R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"]})",
       {R"({"a":1})", R"({"a": 1, "b": "x"})", "{\n  \"a\": 1,\n  \"b\": \"x\"\n}"},
       {R"({})", R"({"b":"x"})", R"({"b":"x","a":1})", R"({"a":1,"c":2})", R"({"a":1,})"}},
      {R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}})",
       {"{}", R"({"a":1})", R"({"b":2})", R"({"a":1,"b":2})"}, {R"({,"b":2})", R"({"a":1"b":2})"}},
      {R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":true})",
       {R"({"a":1,"zz":[1,{"q":null}]})", R"({"zz":"v"})", "{}", R"({"a":1,"ab":2,"":3,"b":4})"},
       {R"({"zz":1,"a":1})", R"({"a":1,"a":2})"}},
      {R"({"type":"object","additionalProperties":{"type":"integer"}})", {R"({"k":1,"j":2})", "{}"}, {R"({"k":"v"})"}},
      {R"({"type":"object"})", {"{}", R"({"any":{"thing":[1,"2",null]}})"}, {"[]"}},
      {R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"]}},"$ref":"#/$defs/node"})",
       {R"({"v":1,"next":{"v":2,"next":null}})"}, {R"({"v":1,"next":{"v":2}})"}},
      {R"({"definitions":{"x":{"type":"boolean"}},"type":"array","items":{"$ref":"#/definitions/x"}})", {"[true,false]"},
       {"[1]"}},
      {R"({"title":"T","description":"d","type":"integer","default":3,"examples":[1]})", {"7"}, {"x"}},
      {"true", {"1", R"({"a":[]})", R"("s")"}, {"x"}},
      {R"({"allOf":[{"type":"integer"}]})", {"1"}, {"true"}},
      {R"({"type":"object","properties":{"k\"ey":{"const":1}},"required":["k\"ey"]})", {R"({"k\"ey":1})"}, {"{}"}},
  };
  for (const auto& c : cases) {
    auto g = compile_json_schema(ojson::parse(c.schema));
    for (const auto& s : c.yes) EXPECT_TRUE(full_match(g, s)) << c.schema << " should accept " << s;
    for (const auto& s : c.no) EXPECT_FALSE(full_match(g, s)) << c.schema << " should reject " << s;
  }
}

TEST(GrammarJsonSchema, PropertiesFollowSchemaOrder) {
  auto ordered = compile_json_schema_text(R"({"type":"object","properties":{"z":{"type":"integer"},"a":{"type":"integer"}},"required":["z","a"]})");
  EXPECT_TRUE(full_match(ordered, R"({"z":1,"a":2})"));
  EXPECT_FALSE(full_match(ordered, R"({"a":2,"z":1})"));
  // A nlohmann::json has sorted its keys already: alphabetical order.
  auto sorted = compile_json_schema(nlohmann::json::parse(R"({"properties":{"z":{"type":"integer"},"a":{"type":"integer"}},"required":["z","a"]})"));
  EXPECT_TRUE(full_match(sorted, R"({"a":2,"z":1})"));
}

TEST(GrammarJsonSchema, WhitespaceIsBounded) {
  auto g = compile_json_schema(ojson::parse(R"({"type":"array","items":{"type":"integer"}})"));
  EXPECT_TRUE(full_match(g, "[\n" + std::string(20, ' ') + "1]"));
  EXPECT_FALSE(full_match(g, "[\n" + std::string(21, ' ') + "1]"));
  EXPECT_FALSE(full_match(g, "[  1]"));
  EXPECT_FALSE(full_match(g, " [1]"));
}

TEST(GrammarJsonSchema, AnyJsonIsAnObject) {
  auto g = compile_any_json();
  EXPECT_TRUE(full_match(g, R"({"a": [1, 2.5, "x", true, false, null, {}], "b": {"c": []}})"));
  EXPECT_FALSE(full_match(g, "[1]"));
  EXPECT_FALSE(full_match(g, R"({"a":})"));
  EXPECT_FALSE(full_match(g, R"({'a':1})"));
}

TEST(GrammarJsonSchema, UnsupportedKeywordsAreNamed) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"type":"integer","minimum":3})", "minimum"},
      {R"({"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}})", "uniqueItems"},
      {R"({"type":"object","patternProperties":{}})", "patternProperties"},
      {R"({"not":{}})", "not"},
      {R"({"type":"tuple"})", "tuple"},
      {R"({"type":"string","format":"email"})", "email"},
      {R"({"$ref":"http://x/y"})", "local"},
      {R"({"$ref":"#/$defs/missing"})", "points nowhere"},
      {R"({"allOf":[{"type":"integer"},{"type":"number"}]})", "allOf"},
      {R"({"type":"object","properties":{"a":{}},"required":["b"]})", "required"},
      {R"({"type":"string","maxLength":100000})", "maxLength"},
      {R"({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})", "recursion"},
      {R"({"type":"string","pattern":"(a)\\1"})", "unsupported escape"},
      {"false", "false"},
  };
  for (const auto& [schema, word] : cases) {
    try {
      compile_json_schema(ojson::parse(schema));
      ADD_FAILURE() << schema << " compiled";
    } catch (const GrammarError& e) {
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(compile_json_schema_text("{not json"), GrammarError);
}

}  // namespace
}  // namespace slimkv::grammar::test
