// Random walks: from fill_mask pick random allowed tokens until EOS; every finished text parses as JSON and
// validates against its schema (~20 schemas x many seeds), with fill_mask checked against accepts() throughout.
#include "grammar_helpers.h"

namespace slimkv::grammar::test {
namespace {

const std::vector<const char*>& walk_schemas() {
  static const std::vector<const char*> s = {
      R"({"type":"integer"})",
      R"({"type":"number"})",
      R"({"type":"boolean"})",
      R"({"type":["string","null"],"maxLength":8})",
      R"({"type":"string","minLength":2,"maxLength":5})",
      R"({"type":"string","pattern":"[a-c]{2}-\\d{1,3}"})",
      R"({"type":"string","format":"date"})",
      R"({"type":"string","format":"uuid"})",
      R"({"enum":["red","green","blue",42,null]})",
      R"({"const":{"fixed":[1,2]}})",
      R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":4})",
      R"({"type":"array","items":{"type":"boolean"},"maxItems":0})",
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":6},"age":{"type":"integer"}},"required":["name","age"]})",
      R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"},"c":{"type":"null"}}})",
      R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"additionalProperties":{"type":"boolean"}})",
      R"({"anyOf":[{"type":"integer"},{"type":"object","properties":{"x":{"type":"string","maxLength":3}},"required":["x"]}]})",
      R"({"oneOf":[{"type":"array","items":{"enum":["a","b"]},"maxItems":3},{"type":"null"}]})",
      R"({"$defs":{"tree":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/tree"},"maxItems":2}},"required":["v"]}},"$ref":"#/$defs/tree"})",
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":5},"arguments":{"type":"object","properties":{"city":{"type":"string","maxLength":4},"days":{"type":"integer"}},"required":["city"]}},"required":["name","arguments"]})",
      R"({"type":"object","properties":{"when":{"type":"string","format":"date-time"},"tags":{"type":"array","items":{"type":"string","maxLength":3},"maxItems":3}},"required":["when","tags"]})",
  };
  return s;
}

TEST(GrammarRandomWalk, FinishedTextsValidate) {
  size_t finished_total = 0, walks = 0;
  for (const char* text : walk_schemas()) {
    const ojson schema = ojson::parse(text);
    auto g = compile_json_schema(schema);
    size_t finished_here = 0;
    for (uint64_t seed = 1; seed <= 25; ++seed) {
      bool finished = false;
      // accepts() is cross-checked on the first seeds only (it is |vocab| calls per token).
      std::string out = random_walk(g, tiny_vocab(), seed * 7919, 400, finished, seed <= 3);
      ++walks;
      if (!finished) continue;
      ++finished_here;
      ojson value;
      ASSERT_NO_THROW(value = ojson::parse(out)) << text << " produced non-JSON: " << out;
      std::string why;
      EXPECT_TRUE(schema_valid(value, schema, schema, why)) << text << "\n produced " << out << "\n " << why;
    }
    EXPECT_GT(finished_here, 0u) << text << ": no walk finished";
    finished_total += finished_here;
  }
  EXPECT_GT(finished_total, walks / 2);
}

TEST(GrammarRandomWalk, RegexAndChoiceWalks) {
  auto re = compile_regex("(ab|c)+\\d?");
  auto choice = compile_choice({"red", "green", "greenish", "ab"});
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    bool finished = false;
    std::string out = random_walk(re, tiny_vocab(), seed, 200, finished, seed <= 3);
    if (finished) {
      EXPECT_TRUE(std::regex_match(out, std::regex("(ab|c)+\\d?"))) << out;
    }
    out = random_walk(choice, tiny_vocab(), seed, 50, finished, seed <= 3);
    EXPECT_TRUE(finished);
    EXPECT_TRUE(out == "red" || out == "green" || out == "greenish" || out == "ab") << out;
  }
}

TEST(GrammarRandomWalk, AnyJsonWalksParse) {
  auto g = compile_any_json();
  size_t finished_count = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    bool finished = false;
    std::string out = random_walk(g, tiny_vocab(), seed, 300, finished, seed <= 2, 0.9);
    if (!finished) continue;
    ++finished_count;
    ojson value;
    ASSERT_NO_THROW(value = ojson::parse(out)) << out;
    EXPECT_TRUE(value.is_object()) << out;
  }
  EXPECT_GT(finished_count, 5u);
}

}  // namespace
}  // namespace slimkv::grammar::test
