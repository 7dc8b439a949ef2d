// TeacherForcedRun, what `eval` scores with: a prompt prefilled in chunks gives the same logits as fed token by
// token when nothing is evicted (batched == single); dynamic retention changes a prompt's own logits only where the
// config evicts in prefill.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/dot.h"
#include "model_helpers.h"
#include "runner/teacher_forced.h"

namespace slimkv::test {
namespace {

// The largest |a - b| over the rows, relative to the largest |b| (logits computed along two summation orders).
double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
  }
  return a.size() == b.size() ? diff / scale : INFINITY;
}

// Prefill attends in tiles (paged_attention.h: kMinTileTokens), single tokens query by query: the two agree to
// float rounding. Tiles are batch-invariant among themselves: any chunking of >= 2 tokens gives the same bits.
constexpr double kTileTolerance = 1e-4;

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
    chunked.prefill(prompt, 7, true, a.data());  // 150 = 21 x 7 + 3: every chunk a tile
    for (size_t t = 0; t < prompt.size(); ++t) single.step(prompt[t], b.data() + t * vocab);
    const double d = max_rel_diff(a, b);
    // An int8 cache stores what attention computed, rounded to 1 of 255 levels: a rounding difference upstream
    // moves a code by one level downstream (measured: f32 5.5e-7, int8 1.7e-3 of the largest logit).
    EXPECT_LT(d, std::string(dtype) == "f32" ? kTileTolerance : 5e-3) << dtype;
    if (dot_kernels().attend_tile) EXPECT_GT(d, 0.0) << dtype << ": prefill should have attended in tiles";
    std::vector<float> c(prompt.size() * vocab);
    TeacherForcedRun other(*m, nullptr, cc, 160);
    other.prefill(prompt, 64, true, c.data());  // other tiles (64, 64, 22 tokens): the same bits
    EXPECT_EQ(a, c) << dtype;
    std::vector<float> last(vocab);  // without all_logits: the last row only
    TeacherForcedRun again(*m, nullptr, cc, 160);
    again.prefill(prompt, 64, false, last.data());
    EXPECT_TRUE(std::equal(last.begin(), last.end(), a.end() - static_cast<std::ptrdiff_t>(vocab))) << dtype;
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
  // (retention walks query by query — it keeps each query's probabilities —, the full cache in tiles)
  EXPECT_LT(max_rel_diff(a, base), kTileTolerance);
  const auto row = [&](const std::vector<float>& v, size_t t) { return std::vector<float>(v.begin() + t * vocab, v.begin() + (t + 1) * vocab); };
  EXPECT_LT(max_rel_diff(row(b, 60), row(base, 60)), kTileTolerance);  // before the first eviction can matter
  EXPECT_EQ(row(b, 60), row(a, 60));  // both query by query
  size_t differ = 0;
  for (size_t t = 100; t < prompt.size(); ++t) differ += max_rel_diff(row(b, t), row(a, t)) > kTileTolerance;
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
