// Issue R3 high 2 on the real binary: every route that parses JSON refuses a body past one of the --max-json-* caps
// with a 400 naming the top-level field (keys per object, nesting depth, array length, values in all), JSON text
// held in a request's strings (a schema, a tool call's arguments) is parsed under the same caps, and what stays
// within them is served. The server runs with small caps so the bodies stay small; the default caps and their
// speed on 8 MiB bodies are scripts/bench-json-bodies' (docs/server.md).
#include <gtest/gtest.h>

#include "server/server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

struct JsonCapsTag {
  static std::vector<std::string> server_args() {
    return {"--max-json-keys", "16", "--max-json-depth", "8", "--max-json-items", "64", "--max-json-values", "400"};
  }
};
using ServerJsonCaps = SharedServerTest<JsonCapsTag>;

json object_of(int keys) {
  json o = json::object();
  for (int i = 0; i < keys; ++i) o["k" + std::to_string(i)] = i;
  return o;
}

json nested(int depth) {
  json v = 1;
  for (int i = 0; i < depth; ++i) v = json::array({v});
  return v;
}

// 400, the cap's flag in the message, the field in `param`.
void expect_cap(const std::pair<int, json>& r, const std::string& param, const std::string& flag) {
  EXPECT_EQ(r.first, 400) << r.second;
  ASSERT_TRUE(r.second.contains("error")) << r.second;
  EXPECT_EQ(r.second["error"]["param"], param) << r.second;
  EXPECT_NE(r.second["error"]["message"].get<std::string>().find(flag), std::string::npos) << r.second;
}

TEST_F(ServerJsonCaps, EachCapIsA400NamingTheField) {
  json body = {{"prompt", "Once"}, {"max_tokens", 2}};
  body["metadata"] = object_of(17);
  expect_cap(server_->post("/v1/completions", body), "metadata", "--max-json-keys");
  body["metadata"] = nested(8);  // with the body's own object: 9 levels
  expect_cap(server_->post("/v1/completions", body), "metadata", "--max-json-depth");
  body["metadata"] = json::array();
  for (int i = 0; i < 65; ++i) body["metadata"].push_back(i);
  expect_cap(server_->post("/v1/completions", body), "metadata", "--max-json-items");
  body["metadata"] = json::array();
  for (int i = 0; i < 10; ++i) body["metadata"].push_back(json::array({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                                                       14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
                                                                       25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,
                                                                       36, 37, 38, 39, 40, 41}));
  expect_cap(server_->post("/v1/completions", body), "metadata", "--max-json-values");
  // Within every cap: served.
  body["metadata"] = object_of(16);
  EXPECT_EQ(server_->post("/v1/completions", body).first, 200);
  // The same caps on every route that parses JSON.
  json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}, {"user_data", object_of(17)}};
  expect_cap(server_->post("/v1/chat/completions", chat), "user_data", "--max-json-keys");
  expect_cap(server_->post("/tokenize", json{{"prompt", "hi"}, {"x", nested(9)}}), "x", "--max-json-depth");
  json ids = json::array();
  for (int i = 0; i < 65; ++i) ids.push_back(1);
  expect_cap(server_->post("/detokenize", json{{"tokens", ids}}), "tokens", "--max-json-items");
  expect_cap(server_->post("/v1/completions", json{{"prompt", ids}, {"max_tokens", 2}}), "prompt", "--max-json-items");
}

TEST_F(ServerJsonCaps, JsonTextInsideTheBodyMeetsTheSameCaps) {
  // A schema given as a string: its own keys are counted.
  json schema = {{"type", "object"}, {"properties", object_of(17)}};
  for (auto& [k, v] : schema["properties"].items()) v = {{"type", "integer"}};
  json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}};
  chat["guided_json"] = schema.dump();
  expect_cap(server_->post("/v1/chat/completions", chat), "guided_json", "--max-json-keys");
  // A tool call's arguments over the caps are not parsed into the template's object: passed on as their text.
  json msgs = {{{"role", "user"}, {"content", "hi"}},
               {{"role", "assistant"}, {"content", nullptr},
                {"tool_calls", {{{"id", "c1"}, {"type", "function"},
                                 {"function", {{"name", "f"}, {"arguments", object_of(40).dump()}}}}}}},
               {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "ok"}}};
  const auto r = server_->post("/v1/chat/completions", json{{"messages", msgs}, {"max_tokens", 2}});
  EXPECT_EQ(r.first, 200) << r.second;
}

}  // namespace
}  // namespace slimkv::test
