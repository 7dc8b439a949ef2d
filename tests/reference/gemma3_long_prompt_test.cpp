// Gemma 3 (5 sliding-window layers of 16 tokens, 1 global) on a 4,096-token prompt, against llama.cpp run at test
// time (../shared/bench-ref/llama.cpp/slimkv-ref; skipped where this CPU cannot run it): logits at every position
// within the file's criterion, llama.cpp's greedy continuation from the engine (chunked prefill, windows freeing
// their blocks), and the KV each sequence holds at the end = the full layer's tokens + each window layer's window.
#include <gtest/gtest.h>

#include <random>

#include "engine_helpers.h"
#include "reference_helpers.h"

namespace slimkv::test {
namespace {

TEST(Gemma3LongPrompt, MatchesLlamaCppAndHoldsOnlyWindows) {
  const std::string model_path = synthetic_dir() + "/gemma3/gemma3-f32.gguf";
  SKIP_IF_MISSING(model_path);
  const std::string ref_bin = slimkv_ref_binary();
  if (ref_bin.empty()) GTEST_SKIP() << "llama.cpp reference binary not runnable here (bench-ref/llama.cpp/check-cpu)";
  std::mt19937 rng(7);
  std::vector<int32_t> ids = {1};
  while (ids.size() < 4096) ids.push_back(3 + static_cast<int32_t>(rng() % 509));
  const std::string prefix = ::testing::TempDir() + "/gemma3_4096_" + std::to_string(::getpid());
  {
    std::ofstream out(prefix + ".ids");
    for (size_t i = 0; i < ids.size(); ++i) out << (i ? "," : "") << ids[i];
  }
  const std::string cmd = ref_bin + " " + model_path + " " + prefix + ".ids " + prefix + " --greedy 16 --threads 2 " +
                          ">/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto m = load(model_path);
  ThreadPool pool(2);
  double tol = 0;
  for (const ManifestRow& row : manifest_rows()) {
    if (row.file() == "gemma3/gemma3-f32.gguf") tol = row.criteria()["max_abs_logit"].get<double>();
  }
  ASSERT_GT(tol, 0);
  const LogitsDiff d = compare_logits(all_logits(*m, ids, 0, &pool), read_f32_file(prefix + ".logits.f32"), 512);
  std::printf("gemma3 4096: max |dlogit| %.3g, median %.3g, mean KL %.3g, argmax agreement %.4f\n", d.worst(),
              d.quantile(0.5), d.mean_kl, d.argmax_agree);
  EXPECT_LE(d.worst(), tol);

  const auto g = nlohmann::json::parse(read_text_file(prefix + ".greedy.json"));
  const auto want = g["ids"].get<std::vector<int32_t>>();
  const auto margins = g["margins"].get<std::vector<double>>();
  EngineConfig cfg = small_engine_config();
  cfg.sched.max_num_batched_tokens = 512;
  Engine e(*m, cfg);
  RequestParams p;
  p.ignore_eos = true;
  p.max_tokens = 16;
  ASSERT_TRUE(std::holds_alternative<RequestId>(e.add_request(ids, p)));
  std::vector<int32_t> got;
  int32_t held_blocks = 0;
  while (e.has_unfinished()) {
    held_blocks = e.kv_manager().num_used_blocks();  // the sequence's blocks, before the step that finishes it
    for (const auto& ev : e.step()) got.push_back(ev.token);
    e.check_integrity();
  }
  for (size_t k = 0; k < want.size() && margins[k] > 0.01; ++k) ASSERT_EQ(got[k], want[k]) << "greedy step " << k;
  // Before the last step the sequence had 4096 + 14 tokens computed (the prefill sampled the first of 16): the
  // full layer holds all of them, each window layer only the blocks its next query sees (a 16-token window spans
  // at most 3 blocks of 8).
  const KvLayout& layout = e.kv_layout();
  ASSERT_EQ(layout.num_groups(), 6);
  const int64_t n = 4096 + 14, bs = layout.block_size_tokens;
  EXPECT_EQ(held_blocks, layout.blocks_held_after(n));
  EXPECT_LE(held_blocks, (n + bs - 1) / bs + 5 * 3);
  const int64_t held_bytes = held_blocks * layout.bytes_per_block();
  const int64_t full_cache = layout.bytes_per_token() * n;
  std::printf("gemma3 4096: KV held %lld bytes vs %lld for a full cache of every layer (%.2fx less)\n",
              static_cast<long long>(held_bytes), static_cast<long long>(full_cache),
              static_cast<double>(full_cache) / static_cast<double>(held_bytes));
  EXPECT_LT(held_bytes * 5, full_cache);
  std::remove((prefix + ".ids").c_str());
  std::remove((prefix + ".logits.f32").c_str());
  std::remove((prefix + ".greedy.json").c_str());
}

}  // namespace
}  // namespace slimkv::test
