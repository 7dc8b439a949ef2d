// The planner's arithmetic: the seed's worked example, GQA, compression, budgets, overflow; and the SVG writer's
// output parsed as XML.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "ops/memory_plan.h"
#include "ops/native_kv_plan.h"
#include "ops/svg_chart.h"
#include "test_paths.h"

namespace slimkv::test {
namespace {

PlanInput seed_example(int64_t kv_heads = 64) {
  PlanInput in;
  in.shape = {80, 64, kv_heads, 128, 8192, 28672, 32000, 70'000'000'000, "f16"};
  in.context_tokens = 8192;
  in.batch = 1;
  in.compress.enabled = false;
  return in;
}

TEST(MemoryPlan, ReproducesTheSeedsWorkedExample) {
  PlanResult r = make_plan(seed_example());
  EXPECT_EQ(r.before.kv_bytes, int64_t{2} * 80 * 64 * 128 * 8192 * 2);  // 21.47 GB ("about 21.5 GB")
  EXPECT_EQ(r.seed_formula_bytes, r.before.kv_bytes) << "without GQA the seed's formula is exact";
  EXPECT_NEAR(static_cast<double>(r.before.kv_bytes) / 1e9, 21.5, 0.05);
  PlanInput b16 = seed_example();
  b16.batch = 16;
  EXPECT_NEAR(static_cast<double>(make_plan(b16).before.kv_bytes) / 1e9, 344, 0.5);  // "344 GB"
  EXPECT_EQ(r.before.weights_bytes, int64_t{140'000'000'000});
  EXPECT_FALSE(r.compressed);
  EXPECT_EQ(r.after.total_bytes, r.before.total_bytes);
}

TEST(MemoryPlan, GqaUsesKvHeadsAndSaysTheSeedFormulaOverstates) {
  PlanResult r = make_plan(seed_example(8));
  EXPECT_EQ(r.before.kv_bytes * 8, r.seed_formula_bytes);
  EXPECT_EQ(r.before.kv_bytes_per_token, int64_t{2} * 80 * 8 * 128 * 2);
}

TEST(MemoryPlan, CompressionShrinksKvPerLayerAndPerSequence) {
  PlanInput in = seed_example(8);
  in.context_tokens = 32768;
  in.batch = 8;
  in.compress = CompressionConfig{};
  in.compress.kv_cache_dtype = "int8";
  PlanResult q = make_plan(in);
  ASSERT_TRUE(q.compressed);
  EXPECT_EQ(q.after.kv_bytes_per_token_layer[0], 2 * 8 * (128 + 2)) << "int8 values + an fp16 scale per head";
  EXPECT_EQ(q.after.kv_tokens_per_seq, 32768);
  in.compress.kv_sparse_mode = "dynamic";
  in.compress.kv_sparse_topk = 2048;
  in.compress.kv_recent_window = 512;
  in.compress.kv_evict_policy = "merge";
  PlanResult d = make_plan(in);
  EXPECT_EQ(d.after.kv_tokens_per_seq, 2048 + 8) << "top-K plus the summary block";
  EXPECT_EQ(d.after.kv_bytes, int64_t{2080} * 80 * 2056 * 8);
  EXPECT_GT(d.overall_reduction, 0.3);
  in.compress.kv_layer_compress_ratio = std::vector<int32_t>(79, 2);  // one entry short: a clear error
  in.compress.kv_sparse_mode = "off";
  EXPECT_THROW(make_plan(in), Error);
  in.compress.kv_layer_compress_ratio.push_back(4);
  PlanResult lr = make_plan(in);  // planning low rank needs no calibration file
  EXPECT_EQ(lr.after.kv_bytes_per_token_layer[0], 2 * 8 * (64 + 2));
  EXPECT_EQ(lr.after.kv_bytes_per_token_layer[79], 2 * 8 * (32 + 2));
}

TEST(MemoryPlan, LargestBatchAndContextWithinABudget) {
  PlanInput in;
  in.shape = {4, 4, 4, 16, 64, 128, 100, 1000, "f32"};  // 4000 B of weights, 1024 B of f16 KV per token
  in.compress.enabled = false;
  in.context_tokens = 100;
  in.batch = 1;
  in.max_batched_tokens = 1;
  in.memory_gib = 1.0;
  PlanResult r = make_plan(in);
  const int64_t budget = int64_t{1} << 30, fixed = r.before.weights_bytes + r.before.activation_bytes;
  EXPECT_EQ(r.max_batch_before, (budget - fixed) / (1024 * 100));
  EXPECT_EQ(r.max_context_before, (budget - fixed) / 1024);
}

TEST(MemoryPlan, HugeContextsAndBatchesAreExactOrAClearError) {
  PlanInput in = seed_example();
  in.context_tokens = 131072;
  in.batch = 1024;
  EXPECT_EQ(make_plan(in).before.kv_bytes, int64_t{2} * 80 * 64 * 128 * 2 * 131072 * 1024);  // 4.4e16: exact
  in.batch = int64_t{1} << 30;
  EXPECT_THROW(make_plan(in), Error) << "beyond 2^63 bytes: an error, not a wrapped number";
  in.batch = 0;
  EXPECT_THROW(make_plan(in), Error);
}

TEST(SvgChart, WellFormedXmlWithEscapedText) {
  const std::string bars = svg_stacked_bars({"A & B <plan>", "x", "GB"}, {"weights", "KV \"cache\""},
                                            {{"4K x 32 before", {1.5, 2.0}}, {"after", {1.5, 0.5}}});
  const std::string lines = svg_lines({"CDF", "ms", "share"}, {{"ttft", {{1, 0.1}, {5, 0.9}}, true}, {"empty", {}}},
                                      nullptr, "");
  std::pair<double, double> mark{0.25, 0.99};
  const std::string marked = svg_lines({"quality", "bytes", "top-1"}, {{"ladder", {{1, 1}, {0.25, 0.99}}, true}}, &mark,
                                       "chosen <here>");
  for (const std::string* svg : {&bars, &lines, &marked}) {
    const auto path = std::filesystem::temp_directory_path() / ("slimkv-svg-" + std::to_string(::getpid()) + ".svg");
    std::ofstream(path) << *svg;
    const std::string cmd = "/usr/bin/python3 -c \"import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); "
                            "assert d.documentElement.tagName == 'svg'\" " + path.string();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << *svg;
    std::filesystem::remove(path);
  }
  EXPECT_NE(bars.find("A &amp; B &lt;plan&gt;"), std::string::npos);
  EXPECT_EQ(xml_escape(std::string("a\x01z")), "az") << "control characters are not XML";
}

// MLA presets: the published figure for DeepSeek-V3 is 70,272 bytes per token in bf16 (61 layers x (512 + 64) x 2).
TEST(MemoryPlan, MlaPresetsHoldOneLatentPerTokenAndLayer) {
  PlanInput in;
  in.shape = preset_shape("deepseek-v3");
  in.context_tokens = 131072;
  in.batch = 8;
  const PlanResult r = make_plan(in);
  EXPECT_EQ(r.before.kv_bytes_per_token, 70272);
  EXPECT_EQ(r.before.kv_bytes, int64_t{70272} * 131072 * 8);
  EXPECT_EQ(in.shape.mha_equivalent_bytes_per_token_layer(2), 128 * (192 + 128) * 2);
  in.compress.kv_cache_dtype = "int8";
  // a latent and a rope key, each with its fp16 scale
  EXPECT_EQ(make_plan(in).after.kv_bytes_per_token, 61 * (2 + 512 + 2 + 64));
  in.compress.kv_cache_dtype = "auto";
  in.compress.kv_compression_rank = 64;
  in.compress.kv_calibration = "x";
  EXPECT_THROW(make_plan(in), Error);  // low rank does not apply to a latent cache
  EXPECT_EQ(make_plan({preset_shape("kimi-k2"), 1, 1}).before.kv_bytes_per_token, 70272);
  EXPECT_EQ(make_plan({preset_shape("deepseek-v2-lite"), 1, 1}).before.kv_bytes_per_token, 27 * 576 * 2);
  EXPECT_THROW(preset_shape("deepseek-v9"), Error);
}

// DeepSeek-V4's natively compressed caches in DeepSeek's serving storage (576-byte entries, 132-byte indexer keys)
// against V3.2 (788 bytes a token and layer) and GQA-8 bf16: the published ratios are ~7% (Flash) and ~10% (Pro)
// of V3.2 at 1M tokens, ~2% of a GQA-8 cache.
TEST(NativeKvPlan, DeepSeekV4PresetsGiveThePublishedRatios) {
  const int64_t ctx = 1048576, entries4 = ctx / 4, entries128 = ctx / 128, window = 128 * 576;
  const NativeKvShape flash = native_kv_preset("deepseek-v4-flash"), pro = native_kv_preset("deepseek-v4-pro");
  EXPECT_EQ(flash.context_bytes(ctx), 21 * entries4 * (576 + 132) + 20 * entries128 * 576 + 43 * window);
  EXPECT_EQ(pro.context_bytes(ctx), 30 * entries4 * (576 + 132) + 31 * entries128 * 576 + 61 * window);
  const double v32 = static_cast<double>(native_kv_preset("deepseek-v3.2").context_bytes(ctx));
  EXPECT_EQ(v32, 61.0 * 788 * ctx);
  const double flash_ratio = flash.context_bytes(ctx) / v32, pro_ratio = pro.context_bytes(ctx) / v32;
  EXPECT_NEAR(flash_ratio, 0.07, 0.015) << flash_ratio;
  EXPECT_NEAR(pro_ratio, 0.10, 0.02) << pro_ratio;
  EXPECT_NEAR(flash.context_bytes(ctx) / static_cast<double>(native_kv_preset("gqa8-43l-bf16").context_bytes(ctx)),
              0.02, 0.005);
  EXPECT_NEAR(pro.context_bytes(ctx) / static_cast<double>(native_kv_preset("gqa8-61l-bf16").context_bytes(ctx)),
              0.02, 0.005);
  // The preset's layer split in bf16 (1024-byte entries, 256-byte indexer keys): the ~9.6 GiB a public write-up
  // gives for V4-Pro at 1M tokens.
  int64_t pro_bf16 = 0;
  for (NativeKvKind k : pro.kinds) {
    if (k.per_sequence) continue;
    k.record_bytes = k.record_bytes == 576 ? 1024 : 256;
    pro_bf16 += k.bytes(ctx);
  }
  EXPECT_NEAR(static_cast<double>(pro_bf16) / (1 << 30), 9.6, 0.05);
  EXPECT_TRUE(is_native_kv_preset("deepseek-v4-pro"));
  EXPECT_THROW(native_kv_preset("deepseek-v4-ultra"), Error);
}

}  // namespace
}  // namespace slimkv::test
