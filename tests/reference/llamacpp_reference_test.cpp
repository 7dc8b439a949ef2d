// Every model of ../shared/models/synthetic/manifest.jsonl in the families issue G covers is checked against
// llama.cpp's own outputs with that file's criteria (README there): F32 files to max |Δlogit| <= max_abs_logit at
// every position on all three evaluation paths (one batch, token by token, chunks of 7 that split windows) with
// greedy ids identical while llama.cpp's margin is above the threshold; F16/BF16/quantized files by mean KL and
// argmax agreement against .logits.f32 and, with every weight dequantized to F32 (dequantize_weights), to
// dequant_max_abs_logit against .dequant_logits.f32 (this pins each weight type's block layout). Files with tensor
// types slimkv does not read are skipped with the types named. Each file prints one REF line (what docs/models.md tabulates).
#include <gtest/gtest.h>

#include "engine_helpers.h"
#include "model/weight_packing.h"
#include "reference_helpers.h"

namespace slimkv::test {
namespace {

// Issue G's families, issue H's deepseek2 and issue V's deepseek4.
const std::set<std::string> kGFamilies = {"llama",  "qwen2",     "qwen3",    "qwen3moe",
                                           "gemma3", "phi3",      "deepseek2", "deepseek4"};

class LlamaCppReference : public ::testing::TestWithParam<ManifestRow> {};

TEST_P(LlamaCppReference, LogitsAndGreedyMatch) {
  const ManifestRow& row = GetParam();
  if (!kGFamilies.count(row.family())) GTEST_SKIP() << row.family() << " is another issue's family (V)";
  const auto missing = row.unsupported_types();
  if (!missing.empty()) GTEST_SKIP() << "tensor types not supported yet (issue Q): " << fmt::format("{}", fmt::join(missing, ", "));
  auto m = load(row.path("file"));
  const int32_t V = m->config.vocab_size;
  const std::vector<int32_t> ids = read_ids_file(synthetic_dir() + "/" + row.j["prompt"].get<std::string>());
  const std::vector<float> ref = read_f32_file(row.path("logits"));
  ThreadPool pool(2);
  const nlohmann::json& c = row.criteria();
  std::string line = fmt::format("REF {} family={} ftype={}", row.file(), row.family(), row.ftype());
  for (int32_t chunk : {0, 1, 7}) {
    const LogitsDiff d = compare_logits(all_logits(*m, ids, chunk, chunk == 0 ? &pool : nullptr), ref, V);
    const std::string path = chunk == 0 ? "batch" : chunk == 1 ? "seq" : "ubatch7";
    line += fmt::format(" {}:max={:.2g},kl={:.2g},agree={:.3f}", path, d.worst(), d.mean_kl, d.argmax_agree);
    if (row.is_f32() && c.value("statistical", false)) {
      // MoE routing near-ties: at least 90% of positions within the q90 value (README's criterion).
      const double tol = c["max_abs_logit_q90"].get<double>();
      size_t within = 0;
      for (double x : d.max_abs) within += x <= tol;
      EXPECT_GE(static_cast<double>(within), 0.9 * static_cast<double>(d.max_abs.size())) << path;
    } else if (row.is_f32()) {
      const double tol = c["max_abs_logit"].get<double>();
      for (size_t p = 0; p < d.max_abs.size(); ++p) {
        ASSERT_LE(d.max_abs[p], tol) << path << " position " << p;
      }
    } else {
      EXPECT_LE(d.mean_kl, c["mean_kl_max"].get<double>()) << path;
      EXPECT_GE(d.argmax_agree, c["argmax_agree_min"].get<double>()) << path;
    }
  }
  if (m->config.mla.enabled() && row.is_f32()) {  // MLA decompressed into per-head K/V: the same logits
    for (int32_t chunk : {0, 7}) {
      const LogitsDiff d = compare_logits(all_logits(*m, ids, chunk, &pool, 16, MlaAttention::Decompressed), ref, V);
      line += fmt::format(" decompressed{}:max={:.2g}", chunk ? "-ubatch7" : "", d.worst());
      EXPECT_LE(d.worst(), c["max_abs_logit"].get<double>());
    }
  }
  if (!row.is_f32() && row.j.contains("dequant_logits")) {
    // The same file with every weight dequantized to F32 by the type traits' reference: llama.cpp's
    // .dequant_logits computes exactly that, so this pins each type's block layout bit for bit.
    auto md = load(row.path("file"));
    dequantize_weights(*md);
    const LogitsDiff d = compare_logits(all_logits(*md, ids, 0, &pool), read_f32_file(row.path("dequant_logits")), V);
    line += fmt::format(" dequant:max={:.2g}", d.worst());
    if (c.value("statistical", false)) {
      const double tol = c.value("dequant_max_abs_logit_q90", c["dequant_max_abs_logit"].get<double>());
      size_t within = 0;
      for (double x : d.max_abs) within += x <= tol;
      EXPECT_GE(static_cast<double>(within), 0.9 * static_cast<double>(d.max_abs.size())) << "dequant";
    } else {
      EXPECT_LE(d.worst(), c["dequant_max_abs_logit"].get<double>()) << "dequant";
    }
  }
  // Greedy continuation: identical while llama.cpp's own margin is above the threshold.
  const auto g = nlohmann::json::parse(read_text_file(row.path("file").substr(0, row.path("file").size() - 5) +
                                                      ".greedy.json"));
  const auto want = g["ids"].get<std::vector<int32_t>>();
  const auto margins = g["margins"].get<std::vector<double>>();
  const auto got = greedy(*m, ids, static_cast<int32_t>(want.size()), &pool);
  const double min_margin = c.value("greedy_identical_while_margin_above", 0.0);
  size_t same = 0;
  while (same < want.size() && got[same] == want[same]) ++same;
  line += fmt::format(" greedy={}/{}", same, want.size());
  if (row.is_f32()) {
    for (size_t k = 0; k < want.size() && margins[k] > min_margin; ++k) {
      ASSERT_EQ(got[k], want[k]) << "greedy step " << k << " (llama.cpp margin " << margins[k] << ")";
    }
  }
  std::printf("%s\n", line.c_str());
}

// The engine's path (continuous batching, chunked prefill of 7 tokens, 4-token blocks, per-group block tables,
// windows freeing blocks, a prefix-cache hit on a second copy of the prompt) gives llama.cpp's greedy tokens.
TEST_P(LlamaCppReference, EngineGreedyMatchesWithChunkingAndPrefixHits) {
  const ManifestRow& row = GetParam();
  if (!kGFamilies.count(row.family()) || !row.is_f32()) GTEST_SKIP() << "F32 files of issue G's families";
  auto m = load(row.path("file"));
  const std::vector<int32_t> ids = read_ids_file(synthetic_dir() + "/" + row.j["prompt"].get<std::string>());
  const auto g = nlohmann::json::parse(read_text_file(row.path("file").substr(0, row.path("file").size() - 5) +
                                                      ".greedy.json"));
  const auto want = g["ids"].get<std::vector<int32_t>>();
  const auto margins = g["margins"].get<std::vector<double>>();
  EngineConfig cfg = small_engine_config();
  cfg.cache.block_size = 4;
  cfg.sched.max_num_batched_tokens = 7;
  cfg.sched.max_model_len = 512;  // DeepSeek files declare 163,840 tokens
  std::vector<int32_t> other(ids.begin(), ids.begin() + 20);
  const EngineRun r = run_requests(*m, cfg, {{ids, 16, 0}, {other, 16, 0}, {ids, 16, 30}});
  for (int which : {0, 2}) {
    for (size_t k = 0; k < want.size() && margins[k] > 0.01; ++k) {
      ASSERT_EQ(r.tokens[which][k], want[k]) << "request " << which << " step " << k;
    }
  }
  EXPECT_GT(r.metrics.prefix_hit_tokens, 0) << "the late copy of the prompt should hit the prefix cache";
}

std::string row_name(const ::testing::TestParamInfo<ManifestRow>& info) {
  std::string s = info.param.file();
  s = s.substr(s.find('/') + 1);
  for (auto& ch : s) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return s;
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LlamaCppReference);
INSTANTIATE_TEST_SUITE_P(Synthetic, LlamaCppReference, ::testing::ValuesIn(manifest_rows()), row_name);

}  // namespace
}  // namespace slimkv::test
