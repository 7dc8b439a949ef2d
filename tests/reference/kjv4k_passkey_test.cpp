// The project's long-context test model (models/kjv-4k, issue L2) answers a passkey at 2K tokens through the
// engine with the full cache: the committed GGUF and tokenizer load, the first 2,048-token passkey case of the
// committed test set (models/kjv-4k/passkey.jsonl) is prefilled in chunks and the greedy answer's digits match.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine_helpers.h"
#include "model_helpers.h"
#include "test_paths.h"

namespace slimkv::test {
namespace {

nlohmann::json first_case(const std::string& path, const std::string& kind, int64_t context_tokens) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j.value("kind", "") == kind && j.value("context_tokens", int64_t{0}) == context_tokens) return j;
  }
  return nullptr;
}

TEST(Kjv4k, AnswersAPasskeyAt2KWithTheFullCache) {
  const std::string dir = repo_dir() + "/models/kjv-4k";
  SKIP_IF_MISSING(dir + "/model.gguf");
  SKIP_IF_MISSING(dir + "/passkey.jsonl");
  const nlohmann::json c = first_case(dir + "/passkey.jsonl", "passkey", 2048);
  ASSERT_FALSE(c.is_null()) << "no passkey@2048 case in the test set";
  auto m = load(dir + "/model.gguf");
  const std::vector<int32_t> prompt = m->tokenizer->encode(c["prompt"].get<std::string>(), true);
  ASSERT_GT(prompt.size(), 2000u);
  EngineConfig cfg = small_engine_config();
  cfg.cache.kv_cache_memory_gib = 0.1;
  cfg.sched.max_num_batched_tokens = 512;
  Engine e(*m, cfg);
  RequestParams p;
  p.max_tokens = 8;
  ASSERT_TRUE(std::holds_alternative<RequestId>(e.add_request(prompt, p)));
  std::vector<int32_t> out;
  while (e.has_unfinished()) {
    for (const auto& ev : e.step()) out.push_back(ev.token);
  }
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), out.begin(), out.end());
  const std::string text = m->tokenizer->decode(all).substr(m->tokenizer->decode(prompt).size());
  const size_t a = text.find_first_of("0123456789");
  ASSERT_NE(a, std::string::npos) << "no digits in '" << text << "'";
  const std::string digits = text.substr(a, text.find_first_not_of("0123456789", a) - a);
  EXPECT_EQ(digits, c["answer"].get<std::string>()) << "generated '" << text << "'";
}

}  // namespace
}  // namespace slimkv::test
