// TeacherForcedRun, what `eval` scores with: a prompt prefilled in chunks gives the same logits as fed token by
// token when nothing is evicted (batched == single); dynamic retention changes a prompt's own logits only where the
// config evicts in prefill.
#include <gtest/gtest.h>

#include "model_helpers.h"
#include "runner/teacher_forced.h"

namespace slimkv::test {
namespace {

std::vector<int32_t> long_prompt(int32_t n) {
  std::vector<int32_t> p = {1};
  for (int32_t j = 1; j < n; ++j) p.push_back(3 + (j * 29) % 509);
  return p;
}

TEST(TeacherForced, ChunkedPrefillEqualsTokenByToken) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  const auto prompt = long_prompt(150);
  const size_t vocab = static_cast<size_t>(m->config.vocab_size);
  for (const char* dtype : {"f32", "int8"}) {
    CompressionConfig cc;
    cc.kv_cache_dtype = dtype;
    TeacherForcedRun chunked(*m, nullptr, cc, 160), single(*m, nullptr, cc, 160);
    std::vector<float> a(prompt.size() * vocab), b(prompt.size() * vocab);
    chunked.prefill(prompt, 7, true, a.data());
    for (size_t t = 0; t < prompt.size(); ++t) single.step(prompt[t], b.data() + t * vocab);
    EXPECT_EQ(a, b) << dtype;
    std::vector<float> last(vocab);  // without all_logits: the last row only
    TeacherForcedRun again(*m, nullptr, cc, 160);
    again.prefill(prompt, 64, false, last.data());
    EXPECT_TRUE(std::equal(last.begin(), last.end(), b.end() - static_cast<std::ptrdiff_t>(vocab))) << dtype;
  }
}

TEST(TeacherForced, RetentionActsInPrefillOnlyWhereTheConfigSays) {
  // Dynamic retention after the prompt: the prompt's own logits are the full cache's (nothing is evicted until it
  // is computed). Evicting every 32 prompt tokens: the first rows agree, later rows see the evictions. Either way
  // the prompt ends within its budget.
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  const auto prompt = long_prompt(400);
  const size_t vocab = static_cast<size_t>(m->config.vocab_size);
  auto prefill_rows = [&](const CompressionConfig& cc, int32_t& live) {
    std::vector<float> rows(prompt.size() * vocab);
    TeacherForcedRun run(*m, nullptr, cc, 410, 8);
    run.prefill(prompt, 100, true, rows.data());
    live = run.live_blocks();
    return rows;
  };
  CompressionConfig full;
  full.enabled = false;
  CompressionConfig after;
  after.kv_sparse_mode = "dynamic";
  after.kv_sparse_topk = 64;
  after.kv_recent_window = 24;
  CompressionConfig in_prefill = after;
  in_prefill.kv_evict_during_prefill = 32;
  int32_t live_full = 0, live_after = 0, live_in = 0;
  const auto base = prefill_rows(full, live_full), a = prefill_rows(after, live_after), b = prefill_rows(in_prefill, live_in);
  EXPECT_EQ(a, base);
  const auto row = [&](const std::vector<float>& v, size_t t) { return std::vector<float>(v.begin() + t * vocab, v.begin() + (t + 1) * vocab); };
  EXPECT_EQ(row(b, 60), row(base, 60));  // before the first eviction can matter (64 tokens fit the budget)
  size_t differ = 0;
  for (size_t t = 100; t < prompt.size(); ++t) differ += row(b, t) != row(base, t);
  EXPECT_GT(differ, 250u);
  EXPECT_GE(live_full, 400 / 8);
  EXPECT_LE(live_after, 64 / 8 + 1);
  EXPECT_LE(live_in, 64 / 8 + 1);
}

TEST(TeacherForced, AWindowedCachePrefillsChunksLargerThanItsWindow) {
  // A chunk's blocks are allocated before the window frees the old ones: the run's pool must hold both.
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  CompressionConfig cc;
  cc.kv_sparse_mode = "static";
  cc.kv_recent_window = 32;
  const auto prompt = long_prompt(400);
  std::vector<float> logits(static_cast<size_t>(m->config.vocab_size));
  TeacherForcedRun run(*m, nullptr, cc, 410, 8);
  EXPECT_NO_THROW(run.prefill(prompt, 128, false, logits.data()));
  EXPECT_LE(run.live_blocks(), 32 / 8 + 3);
}

}  // namespace
}  // namespace slimkv::test
