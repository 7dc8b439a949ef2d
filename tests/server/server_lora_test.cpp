// LoRA adapters on the real server (issue E2): --lora NAME=PATH at start, a request's `model` picks one (vLLM's
// convention), /v1/models lists them with their parent; adapters and the base in concurrent requests answer as each
// alone; load -> use -> unload -> 404 by name behind the API key; bad loads refused naming the field.
#include <gtest/gtest.h>

#include <thread>

#include "lora_adapter_file.h"
#include "server_process.h"
#include "test_paths.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

std::string llama_f32() { return models_dir() + "/synthetic/llama/llama-f32.gguf"; }

const httplib::Headers kKey = {{"Authorization", "Bearer sk-lora"}};

// Greedy 12 tokens of a fixed token-id prompt under `model`: (status, text).
std::pair<int, json> complete(const ServerProcess& s, const std::string& model) {
  json prompt = json::array();
  for (int i = 0; i < 40; ++i) prompt.push_back(3 + (i * 37) % 500);
  return s.post("/v1/completions",
                json{{"model", model}, {"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0},
                     {"ignore_eos", true}}.dump(),
                kKey);
}

TEST(ServerLora, AdaptersByNameConcurrentlyAndLoadUseUnload) {
  SKIP_IF_MISSING(llama_f32());
  const std::string a = write_adapter(llama_f32(), "srv-a", 4, 8.0f, 21);
  const std::string b = write_adapter(llama_f32(), "srv-b", 8, 0.0f, 22, 0.03f);
  ServerProcess s({"--lora", "ad-a=" + a, "--api-key", "sk-lora"}, llama_f32());

  const json models = json::parse(s.client().Get("/v1/models", kKey)->body);
  ASSERT_EQ(models["data"].size(), 2u) << models.dump();
  EXPECT_EQ(models["data"][1]["id"], "ad-a");
  EXPECT_EQ(models["data"][1]["parent"], "llama-f32");

  const auto base = complete(s, "llama-f32");
  const auto with_a = complete(s, "ad-a");
  ASSERT_EQ(base.first, 200) << base.second.dump();
  ASSERT_EQ(with_a.first, 200) << with_a.second.dump();
  EXPECT_EQ(with_a.second["model"], "ad-a");
  EXPECT_NE(base.second["choices"][0]["text"], with_a.second["choices"][0]["text"]) << "the adapter changes the output";

  // load b at run time, then base, a and b at once: each as alone
  auto [ls, loaded] = s.post("/v1/load_lora_adapter", json{{"lora_name", "ad-b"}, {"lora_path", b}}.dump(), kKey);
  ASSERT_EQ(ls, 200) << loaded.dump();
  const auto with_b = complete(s, "ad-b");
  ASSERT_EQ(with_b.first, 200) << with_b.second.dump();
  EXPECT_NE(with_b.second["choices"][0]["text"], with_a.second["choices"][0]["text"]);
  std::vector<std::pair<int, json>> together(6);
  const char* names[] = {"llama-f32", "ad-a", "ad-b", "ad-b", "ad-a", "llama-f32"};
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) threads.emplace_back([&, i] { together[i] = complete(s, names[i]); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 6; ++i) {
    const auto& alone = i % 5 == 0 ? base : (i == 1 || i == 4) ? with_a : with_b;
    ASSERT_EQ(together[i].first, 200) << together[i].second.dump();
    EXPECT_EQ(together[i].second["choices"][0]["text"], alone.second["choices"][0]["text"]) << names[i];
  }

  // unload: gone by name for new requests
  auto [us, unloaded] = s.post("/v1/unload_lora_adapter", json{{"lora_name", "ad-b"}}.dump(), kKey);
  EXPECT_EQ(us, 200) << unloaded.dump();
  EXPECT_EQ(complete(s, "ad-b").first, 404);
  EXPECT_EQ(s.post("/v1/unload_lora_adapter", json{{"lora_name", "ad-b"}}.dump(), kKey).first, 404);
  EXPECT_EQ(complete(s, "no-such-adapter").first, 404);

  // bad loads: the field named
  auto [bs, bad] = s.post("/v1/load_lora_adapter", json{{"lora_name", "x"}, {"lora_path", llama_f32()}}.dump(), kKey);
  EXPECT_EQ(bs, 400);
  EXPECT_EQ(bad["error"]["param"], "lora_path") << bad.dump();
  EXPECT_NE(bad["error"]["message"].get<std::string>().find("not a LoRA adapter"), std::string::npos) << bad.dump();
  auto [ds, dup] = s.post("/v1/load_lora_adapter", json{{"lora_name", "ad-a"}, {"lora_path", a}}.dump(), kKey);
  EXPECT_EQ(ds, 400) << dup.dump();
  auto [ns, noname] = s.post("/v1/load_lora_adapter", json{{"lora_path", a}}.dump(), kKey);
  EXPECT_EQ(ns, 400);
  EXPECT_EQ(noname["error"]["param"], "lora_name");
  EXPECT_EQ(s.post("/v1/load_lora_adapter", json{{"lora_name", "y"}, {"lora_path", a}}.dump()).first, 401)
      << "behind the API key";
}

TEST(ServerLora, RuntimeLoadingNeedsAnApiKeyAndABadFlagFailsTheStart) {
  SKIP_IF_MISSING(llama_f32());
  const std::string a = write_adapter(llama_f32(), "srv-c", 4, 8.0f, 23);
  ServerProcess s({}, llama_f32());
  auto [st, r] = s.post("/v1/load_lora_adapter", json{{"lora_name", "c"}, {"lora_path", a}}.dump());
  EXPECT_EQ(st, 403) << r.dump();
  EXPECT_THROW(ServerProcess({"--lora", "broken=" + llama_f32()}, llama_f32()), std::runtime_error);
  EXPECT_THROW(ServerProcess({"--lora", "no-equals-sign"}, llama_f32()), std::runtime_error);
}

}  // namespace
}  // namespace slimkv::test
