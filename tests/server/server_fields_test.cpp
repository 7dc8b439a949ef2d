// Issue R2, the probe's findings above the front: a completion ended by a stop string is counted as "stop" in
// /metrics (it was counted as an abort); every field the probe found silently ignored is honoured (min_p,
// stop_token_ids, include_stop_str_in_output, add_generation_prompt) or refused with a 400 naming it; one
// request's cost is bounded (--max-request-cost); values are checked (best_of 0, stream_options without stream, a
// non-string user); a huge value is not echoed back whole; /v1/models has a creation time; a connection cap per
// client address turns the extra connections away with 503 and serves again once they close.
#include <gtest/gtest.h>

#include "server/server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

double fields_metric(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(text.find(' ', at + series.size()) + 1));
}

class ServerFields : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SKIP_IF_MISSING(default_model());
    server_ = new ServerProcess({"--max-request-cost", "20000"});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!server_) GTEST_SKIP() << "no server";
  }
  static json ok(const json& body, const std::string& path = "/v1/completions") {
    auto [status, r] = server_->post(path, body);
    EXPECT_EQ(status, 200) << r.dump();
    return r;
  }
  static void refused(const json& body, const std::string& param, const std::string& path = "/v1/completions") {
    auto [status, r] = server_->post(path, body);
    EXPECT_EQ(status, 400) << body.dump() << " -> " << r.dump();
    EXPECT_EQ(r["error"]["param"], param) << r.dump();
  }
  static inline ServerProcess* server_ = nullptr;
};

TEST_F(ServerFields, AStopStringFinishIsCountedAsStop) {
  const json greedy = ok({{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}});
  const std::string text = greedy["choices"][0]["text"];
  ASSERT_GT(text.size(), 12u);
  const std::string stop = text.substr(8, 4);  // a string the greedy text reaches
  const std::string before = server_->get("/metrics");
  for (const std::string path : {"/v1/completions", "/v1/chat/completions"}) {
    json body = {{"max_tokens", 40}, {"temperature", 0}, {"stop", stop}};
    if (path == "/v1/completions") body["prompt"] = "Once upon a time";
    else body["messages"] = json::array({{{"role", "user"}, {"content", "Once upon a time"}}});
    const json r = ok(body, path);
    if (path == "/v1/completions") EXPECT_EQ(r["choices"][0]["finish_reason"], "stop") << r.dump();
  }
  const std::string stop_series = "slimkv:request_success_total{model_name=\"stories260K\",finished_reason=\"stop\"}";
  const std::string abort_series = "slimkv:request_success_total{model_name=\"stories260K\",finished_reason=\"abort\"}";
  const std::string length_series =
      "slimkv:request_success_total{model_name=\"stories260K\",finished_reason=\"length\"}";
  // The response is sent after the stop string's accounting: the count is there at once.
  std::string after = server_->get("/metrics");
  EXPECT_GE(fields_metric(after, stop_series) - fields_metric(before, stop_series), 1) << after;
  EXPECT_EQ(fields_metric(after, abort_series), fields_metric(before, abort_series)) << "no abort counted";
  // The engine ahead of the session: with max_tokens ending on the token that completes the stop string, the engine
  // finishes the request ("length") in the same step that emits the token, before its session finds the string.
  // The client sees "stop", and so must /metrics (it counted "length").
  for (int max_tokens = 1; max_tokens <= 40; ++max_tokens) {
    const std::string was = server_->get("/metrics");
    const json r = ok({{"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"temperature", 0}, {"stop", stop}});
    if (r["choices"][0]["finish_reason"] != "stop") continue;
    const std::string now = server_->get("/metrics");
    EXPECT_EQ(fields_metric(now, stop_series) - fields_metric(was, stop_series), 1) << now;
    EXPECT_EQ(fields_metric(now, length_series), fields_metric(was, length_series)) << now;
    EXPECT_EQ(fields_metric(now, abort_series), fields_metric(was, abort_series)) << now;
    return;
  }
  ADD_FAILURE() << "no max_tokens up to 40 reached the stop string " << stop;
}

TEST_F(ServerFields, TheProbesIgnoredFieldsAreHonoured) {
  const json base = {{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 0}, {"ignore_eos", true}};
  const json greedy = ok(base);
  // min_p 1.0 keeps only the most likely token: sampling at temperature 1 gives the greedy text
  json mp = base;
  mp["temperature"] = 1.0;
  mp["min_p"] = 1.0;
  mp["seed"] = 7;
  EXPECT_EQ(ok(mp)["choices"][0]["text"], greedy["choices"][0]["text"]);
  // stop_token_ids: over the 512-token vocabulary in ranges of 64, exactly the range holding the greedy first token
  // ends the choice before any token (finish "stop", the id not output); the others let it through
  int stopped_ranges = 0;
  for (int lo = 0; lo < 512; lo += 64) {
    json st = base;
    st["max_tokens"] = 1;
    json ids = json::array();
    for (int id = lo; id < lo + 64; ++id) ids.push_back(id);
    st["stop_token_ids"] = ids;
    const json r = ok(st);
    if (r["choices"][0]["finish_reason"] == "stop") {
      ++stopped_ranges;
      EXPECT_EQ(r["usage"]["completion_tokens"], 0) << r.dump();
      EXPECT_EQ(r["choices"][0]["text"], "");
    }
  }
  EXPECT_EQ(stopped_ranges, 1);
  json out_of_vocab = base;
  out_of_vocab["stop_token_ids"] = json::array({512});
  refused(out_of_vocab, "stop_token_ids");
  // include_stop_str_in_output: the stop string ends the text
  const std::string text = greedy["choices"][0]["text"];
  const std::string stop = text.substr(6, 3);
  json inc = base;
  inc["stop"] = stop;
  inc["include_stop_str_in_output"] = true;
  const std::string with = ok(inc)["choices"][0]["text"];
  EXPECT_EQ(with.substr(with.size() - stop.size()), stop);
  inc["include_stop_str_in_output"] = false;
  EXPECT_EQ(ok(inc)["choices"][0]["text"].get<std::string>() + stop, with);
  // add_generation_prompt false: the prompt lacks the assistant's opening ("Assistant:" in the plain format)
  const json chat = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}, {"max_tokens", 1}};
  json no_gen = chat;
  no_gen["add_generation_prompt"] = false;
  EXPECT_LT(ok(no_gen, "/v1/chat/completions")["usage"]["prompt_tokens"].get<int>(),
            ok(chat, "/v1/chat/completions")["usage"]["prompt_tokens"].get<int>());
}

TEST_F(ServerFields, TheRestAreRefusedByName) {
  const json base = {{"prompt", "hi"}, {"max_tokens", 2}};
  for (const auto& [name, value] : std::vector<std::pair<std::string, json>>{
           {"guided_grammar", "root ::= \"a\""}, {"structured_outputs", {{"grammar", "root ::= \"a\""}}},
           {"bad_words", json::array({"x"})},
           {"allowed_token_ids", json::array({1, 2})}, {"prompt_logprobs", 1}, {"use_beam_search", true},
           {"truncate_prompt_tokens", 8}, {"continue_final_message", true}, {"chat_template", "{{ x }}"},
           {"modalities", json::array({"text", "audio"})}, {"audio", {{"voice", "x"}}},
           {"web_search_options", json::object()}, {"function_call", "auto"}}) {
    json b = base;
    b[name] = value;
    refused(b, name);
  }
  json off = base;
  off["use_beam_search"] = false;
  off["bad_words"] = json::array();
  off["modalities"] = json::array({"text"});
  off["continue_final_message"] = false;
  ok(off);
  // Structured output is enforced (issue M): guided_choice / structured_outputs.choice give one of the choices.
  for (const json& c : {json{{"guided_choice", {"a", "b"}}}, json{{"structured_outputs", {{"choice", {"a"}}}}}}) {
    json b = base;
    b.update(c);
    auto [status, r] = server_->post("/v1/completions", b);
    ASSERT_EQ(status, 200) << r.dump();
    EXPECT_TRUE(r["choices"][0]["text"] == "a" || r["choices"][0]["text"] == "b") << r.dump();
  }
}

TEST_F(ServerFields, ValuesAndCostAreChecked) {
  const json base = {{"prompt", "hi"}, {"max_tokens", 2}};
  json b = base;
  b["best_of"] = 0;
  refused(b, "best_of");
  b = base;
  b["stream_options"] = {{"include_usage", true}};
  refused(b, "stream_options");
  b = base;
  b["user"] = 5;
  refused(b, "user");
  // 16 prompts x n 16 x 200 tokens x (1 + 20 logprobs): far over --max-request-cost 20000, refused before any work
  b = {{"prompt", std::vector<std::string>(16, "Once")}, {"n", 16}, {"max_tokens", 200}, {"logprobs", 20}};
  auto [status, r] = server_->post("/v1/completions", b);
  EXPECT_EQ(status, 400);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("--max-request-cost"), std::string::npos) << r.dump();
  // a huge number in a broken body is not echoed back whole
  const std::string huge = "{\"prompt\": \"hi\", \"max_tokens\": 1" + std::string(2'000'000, '0') + "x}";
  auto [s2, r2] = server_->post("/v1/completions", huge);
  EXPECT_EQ(s2, 400);
  EXPECT_LT(r2.dump().size(), 4096u);
  // /v1/models says when the model was created (served)
  auto c = server_->client();
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_GT(json::parse(models->body)["data"][0]["created"].get<int64_t>(), 1'700'000'000);
}

TEST(ServerConnectionCap, ExtraConnectionsFromOneAddressAreTurnedAway) {
  SKIP_IF_MISSING(default_model());
  ServerProcess s({"--max-connections-per-ip", "8"});
  std::vector<int> held;  // 8 kept-alive connections, each known to the server (it answered on it)
  const std::string health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int i = 0; i < 8; ++i) {
    held.push_back(connect_loopback(s.port()));
    ::send(held.back(), health.data(), health.size(), MSG_NOSIGNAL);
    char ok[256];
    ASSERT_GT(::recv(held.back(), ok, sizeof ok, 0), 0);
  }
  const int extra = connect_loopback(s.port());
  char buf[512] = {0};
  const ssize_t n = ::recv(extra, buf, sizeof buf - 1, 0);
  ::close(extra);
  EXPECT_GT(n, 0);
  EXPECT_EQ(std::string(buf).rfind("HTTP/1.1 503", 0), 0u) << buf;
  EXPECT_NE(std::string(buf).find("--max-connections-per-ip"), std::string::npos);
  for (int fd : held) ::close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto c = s.client();
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

}  // namespace
}  // namespace slimkv::test
