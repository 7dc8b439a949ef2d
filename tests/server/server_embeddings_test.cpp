// POST /v1/embeddings on the real binary (issue E2): each input's pooled final hidden state, L2-normalised, equal to
// `slimkv embed`'s direct computation (one sequence alone, pooled outside the engine); float and base64 encodings
// the same vectors; a model without pooling refused naming --pooling; bad fields refused naming them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include <thread>

#include <fmt/format.h>

#include "server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

// `slimkv embed`'s vectors for the texts (the server's tokenization: BOS, special tokens parsed).
std::vector<std::vector<float>> direct_embeddings(const std::vector<std::string>& texts, const char* pooling) {
  std::string cmd = std::string(SLIMKV_BINARY) + " embed -m " + default_model() + " --threads 1 --pooling " + pooling;
  for (const auto& t : texts) cmd += " -p '" + t + "'";
  FILE* p = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << cmd;
  std::vector<std::vector<float>> v;
  const json parsed = json::parse(out);
  for (const auto& d : parsed["data"]) v.push_back(d["embedding"].get<std::vector<float>>());
  return v;
}

std::vector<float> decode_base64_floats(const std::string& s) {
  auto value = [](char c) -> int {
    const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char* at = std::strchr(a, c);
    return at && c ? static_cast<int>(at - a) : -1;
  };
  std::string bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    const int x = value(c);
    if (x < 0) continue;  // padding
    acc = (acc << 6) | static_cast<uint32_t>(x);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

void expect_same(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t j = 0; j < want.size(); ++j) ASSERT_NEAR(got[j], want[j], 1e-5f) << what << " [" << j << "]";
}

TEST(ServerEmbeddings, EqualTheDirectComputationForEveryPooling) {
  SKIP_IF_MISSING(default_model());
  const std::vector<std::string> texts = {"Once upon a time", "The cat sat on the mat and looked at the dog.", "hi"};
  for (const char* pooling : {"mean", "cls", "last"}) {
    ServerProcess s({"--pooling", pooling, "--max-num-batched-tokens", "8"});  // prompts cut into chunks
    const auto want = direct_embeddings(texts, pooling);
    ASSERT_EQ(want.size(), texts.size());
    auto [status, r] = s.post("/v1/embeddings", json{{"input", texts}, {"model", "stories260K"}});
    ASSERT_EQ(status, 200) << r.dump();
    EXPECT_EQ(r["object"], "list");
    EXPECT_EQ(r["model"], "stories260K");
    ASSERT_EQ(r["data"].size(), texts.size());
    int64_t tokens = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      EXPECT_EQ(r["data"][i]["object"], "embedding");
      EXPECT_EQ(r["data"][i]["index"], i);
      const auto v = r["data"][i]["embedding"].get<std::vector<float>>();
      expect_same(v, want[i], fmt::format("{} input {}", pooling, i));
      double norm = 0;
      for (float x : v) norm += static_cast<double>(x) * x;
      EXPECT_NEAR(norm, 1.0, 1e-5) << "L2-normalised";
    }
    auto [bstatus, b] = s.post("/v1/embeddings", json{{"input", texts[1]}, {"encoding_format", "base64"}});
    ASSERT_EQ(bstatus, 200) << b.dump();
    expect_same(decode_base64_floats(b["data"][0]["embedding"]), want[1], std::string(pooling) + " base64");
    for (const auto& t : texts) tokens += static_cast<int64_t>(s.post("/tokenize", json{{"prompt", t}}).second["count"]);
    EXPECT_EQ(r["usage"]["prompt_tokens"], tokens);
    EXPECT_EQ(r["usage"]["total_tokens"], tokens);
  }
}

TEST(ServerEmbeddings, TokenIdsAndConcurrentGenerationAndRefusals) {
  SKIP_IF_MISSING(default_model());
  ServerProcess plain;
  auto [none_status, none] = plain.post("/v1/embeddings", json{{"input", "hi"}});
  EXPECT_EQ(none_status, 400) << none.dump();
  EXPECT_NE(none["error"]["message"].get<std::string>().find("--pooling"), std::string::npos) << none.dump();

  ServerProcess s({"--pooling", "mean"});
  const json ids = {1, 403, 407, 261, 380};
  auto [a_status, a] = s.post("/v1/embeddings", json{{"input", json::array({ids, ids})}});
  ASSERT_EQ(a_status, 200) << a.dump();
  EXPECT_EQ(a["data"][0]["embedding"], a["data"][1]["embedding"]) << "the same ids, the same vector";
  EXPECT_EQ(a["usage"]["prompt_tokens"], 10);
  // beside a long generation: the same vector
  std::pair<int, json> gen;
  std::thread g([&] { gen = s.post("/v1/completions", json{{"prompt", "Once"}, {"max_tokens", 200}, {"ignore_eos", true}}); });
  auto [c_status, c] = s.post("/v1/embeddings", json{{"input", ids}});
  g.join();
  EXPECT_EQ(gen.first, 200);
  ASSERT_EQ(c_status, 200) << c.dump();
  expect_same(c["data"][0]["embedding"].get<std::vector<float>>(),
              a["data"][0]["embedding"].get<std::vector<float>>(), "beside generation");

  const std::pair<json, const char*> bad[] = {
      {json{{"input", json::array()}}, "input"},
      {json{{"input", ""}}, "input"},
      {json{{"input", 5}}, "input"},
      {json{{"input", json::array({1, 999999})}}, "input"},
      {json{{"input", "hi"}, {"encoding_format", "int8"}}, "encoding_format"},
      {json{{"input", "hi"}, {"dimensions", 7}}, "dimensions"},
  };
  for (const auto& [body, param] : bad) {
    auto [status, r] = s.post("/v1/embeddings", body);
    EXPECT_EQ(status, 400) << body.dump() << " -> " << r.dump();
    EXPECT_EQ(r["error"]["param"], param) << body.dump() << " -> " << r.dump();
  }
  EXPECT_EQ(s.post("/v1/embeddings", json{{"input", "hi"}, {"model", "other"}}).first, 404);
  EXPECT_NE(s.get("/metrics").find("num_requests_running{model_name=\"stories260K\"} 0\n"), std::string::npos);
}

}  // namespace
}  // namespace slimkv::test
