// Issue R3 high 2: the bounded JSON parser builds what nlohmann's ordered_json parse builds (key order, duplicate
// keys, numbers' kinds, escapes) without its quadratic key look-up, and refuses past each cap with the path of the
// value that crossed it. (Its speed is measured by bench/json_body_bench.py, not asserted here.)
#include <gtest/gtest.h>

#include <string>

#include "core/bounded_json.h"

namespace slimkv {
namespace {

using ojson = nlohmann::ordered_json;

TEST(BoundedJson, BuildsWhatNlohmannBuilds) {
  const char* docs[] = {
      R"({"b": 1, "a": [1, -2, 3.5, 18446744073709551615, -9223372036854775808], "c": {"z": null, "y": true}})",
      R"([{"k": "v\n\u00e9\ud83d\ude00"}, [], {}, "", 0, -0, 1e308, false])",
      R"({"dup": 1, "x": 2, "dup": {"a": 3}})",  // last value wins, in the first key's place
      R"("just a string")", "42", "null",
  };
  for (const char* d : docs) {
    const ojson want = ojson::parse(d);
    const ojson got = parse_bounded_json(d);
    EXPECT_EQ(got, want) << d;
    EXPECT_EQ(got.dump(), want.dump()) << d;  // same order, same number kinds
  }
  // Many keys (past the hash index's threshold) with duplicates spread through them.
  std::string big = "{";
  for (int i = 0; i < 300; ++i) big += "\"k" + std::to_string(i % 200) + "\": " + std::to_string(i) + ",";
  big += "\"end\": [1, {\"k0\": 1, \"k0\": 2}]}";
  EXPECT_EQ(parse_bounded_json(big).dump(), ojson::parse(big).dump());
}

TEST(BoundedJson, SyntaxErrorsAndNulBytesAreErrors) {
  for (const std::string bad : {std::string("{\"a\": "), std::string("[1,]"), std::string("{\"a\" 1}"),
                                std::string("{\"a\": 1}\0{\"b\": 2}", 17), std::string("")}) {
    try {
      parse_bounded_json(bad);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const JsonTextError& e) {
      EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
      EXPECT_TRUE(e.limit.empty());
    }
  }
  EXPECT_TRUE(parse_bounded_json_or_discarded("{").is_discarded());
  EXPECT_EQ(parse_bounded_json_or_discarded("[1]"), ojson::array({1}));
}

// The cap crossed, its flag, and where: the path of the object / array / value, and the body's top-level field.
JsonTextError refusal(const std::string& text, const JsonLimits& lim) {
  try {
    parse_bounded_json(text, lim);
  } catch (const JsonTextError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << text.substr(0, 80);
  return JsonTextError("", "", "", "");
}

TEST(BoundedJson, EachCapIsRefusedWithThePathThatCrossedIt) {
  JsonLimits lim;
  lim.max_object_keys = 3;
  lim.max_array_items = 4;
  lim.max_depth = 8;
  lim.max_values = 40;
  JsonTextError e = refusal(R"({"model": "m", "metadata": {"a": 1, "b": 2, "c": 3, "d": 4}})", lim);
  EXPECT_EQ(e.limit, "--max-json-keys");
  EXPECT_EQ(e.path, "metadata");
  EXPECT_EQ(e.top_field, "metadata");
  EXPECT_NE(std::string(e.what()).find("'metadata' is an object with more than 3 keys"), std::string::npos) << e.what();
  // Duplicates are not new keys: three distinct keys given five times pass.
  EXPECT_NO_THROW(parse_bounded_json(R"({"a": 1, "b": 2, "c": 3, "a": 4, "b": 5})", lim));

  e = refusal(R"({"messages": [{"role": "user", "content": [1, 2, 3, 4, 5]}]})", lim);
  EXPECT_EQ(e.limit, "--max-json-items");
  EXPECT_EQ(e.path, "messages[0].content");
  EXPECT_EQ(e.top_field, "messages");

  e = refusal(R"({"a": [[[[[[[[[1]]]]]]]]]})", lim);
  EXPECT_EQ(e.limit, "--max-json-depth");
  EXPECT_EQ(e.top_field, "a");
  EXPECT_EQ(e.path, "a[0][0][0][0][0][0]");

  e = refusal(std::string(100000, '['), lim);  // 100k-deep: refused at the cap, not a stack overflow
  EXPECT_EQ(e.limit, "--max-json-depth");
  EXPECT_EQ(e.top_field, "");

  const std::string four = "[[1, 2, 3], [1, 2, 3], [1, 2, 3], [1, 2, 3]]";  // 17 values
  e = refusal("{\"x\": " + four + ", \"y\": " + four + ", \"z\": " + four + "}", lim);
  EXPECT_EQ(e.limit, "--max-json-values");
  EXPECT_EQ(e.top_field, "z");
}

TEST(BoundedJson, DefaultCapsAdmitLargeOrdinaryDocuments) {
  // 10,000 keys in one object (the default cap) and a 100,000-id prompt pass; one key more is refused.
  std::string keys = "{";
  for (int i = 0; i < 10000; ++i) keys += "\"" + std::to_string(i) + "\": " + std::to_string(i) + (i + 1 < 10000 ? "," : "");
  const ojson k = parse_bounded_json(keys + "}");
  EXPECT_EQ(k.size(), 10000u);
  EXPECT_EQ(k.begin().key(), "0");
  EXPECT_EQ(k["9999"], 9999);
  EXPECT_EQ(refusal(keys + ", \"x\": 1}", JsonLimits{}).limit, "--max-json-keys");
  std::string ids = "{\"prompt\": [";
  for (int i = 0; i < 100000; ++i) ids += std::to_string(i % 500) + (i + 1 < 100000 ? "," : "");
  EXPECT_EQ(parse_bounded_json(ids + "]}")["prompt"].size(), 100000u);
}

}  // namespace
}  // namespace slimkv
