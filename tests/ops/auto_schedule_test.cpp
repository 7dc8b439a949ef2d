// --kv-sparse-schedule auto: `calibrate` measures each layer's retention sensitivity (stored with the attention
// profile, version 2 of the file), the engine turns it into per-layer budgets with the same total, and the engine
// stays batched == single with them; old or missing calibrations are clear errors. Under select, the per-head read
// profile becomes per-(layer, KV head) shares of the context with the same mean.
#include <gtest/gtest.h>

#include <unistd.h>

#include "engine_helpers.h"
#include "model/kv_projection.h"
#include "model_helpers.h"
#include "compress/attention_profile.h"
#include "ops/calibration_run.h"

namespace slimkv::test {
namespace {

TEST(AutoSchedule, ReadsTheCalibrationAndKeepsBatchedEqualToSingle) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  ThreadPool pool(2);
  auto ids = m->tokenizer->encode(read_text_file(data_dir() + "/tinystories_valid_head.txt").substr(0, 6000), true);
  ids.resize(std::min<size_t>(ids.size(), 1024));
  Calibration cal = calibrate_model(*m, &pool, ids, 512, {}, 512, 512);
  ASSERT_EQ(cal.layer_sensitivity.size(), 5u);
  ASSERT_EQ(cal.attention.mass.size(), 5u);
  const std::string path = ::testing::TempDir() + "/auto_" + std::to_string(::getpid()) + ".calib";
  cal.save(path);
  const Calibration back = Calibration::load(path);
  EXPECT_EQ(back.layer_sensitivity, cal.layer_sensitivity);
  EXPECT_EQ(back.attention.mass, cal.attention.mass);
  EngineConfig c = small_engine_config();
  c.compress.kv_sparse_mode = "dynamic";
  c.compress.kv_sparse_topk = 96;
  c.compress.kv_sink_tokens = 4;
  c.compress.kv_recent_window = 32;
  c.compress.kv_sparse_schedule = "auto";
  c.compress.kv_calibration = path;
  const CompressionConfig r = resolve_sparse_schedule(c.compress, *m, 8);
  ASSERT_EQ(r.kv_sparse_layer_topk.size(), 5u);
  int32_t sum = 0, most = 0;
  for (int32_t l = 0; l < 5; ++l) {
    sum += r.kv_sparse_layer_topk[l];
    if (cal.layer_sensitivity[l] > cal.layer_sensitivity[most]) most = l;
  }
  EXPECT_LE(sum, 5 * 96);
  EXPECT_GT(sum, 5 * 96 - 8) << "the same total, within one block";
  EXPECT_EQ(*std::max_element(r.kv_sparse_layer_topk.begin(), r.kv_sparse_layer_topk.end()), r.kv_sparse_layer_topk[most]);
  const std::vector<TestRequest> jobs = patterned_requests(3, 90, 41, 29, 3, 100);
  const EngineRun batched = run_requests(*m, c, jobs);
  EXPECT_GT(batched.evicted_blocks, 0);
  expect_each_alone_equal(*m, c, jobs, batched);
  // Errors: a calibration without sensitivities, or none at all.
  Calibration old = cal;
  old.layer_sensitivity.clear();
  old.save(path);
  expect_engine_error<Engine>(*m, c, "no layer sensitivities");
  c.compress.kv_calibration.clear();
  expect_engine_error<Engine>(*m, c, "--kv-sparse-schedule auto needs --kv-calibration");
  std::remove(path.c_str());
}

TEST(AutoSchedule, ReadSharesFavourDiffuseHeadsAndKeepTheMean) {
  AttentionProfile p;  // one layer: head 0 sharp (90% of its mass in the first quarter), head 1 diffuse (linear)
  p.read_steps = 4;
  p.head_read_mass = {{0.9f, 0.95f, 0.98f, 1.0f, 0.25f, 0.5f, 0.75f, 1.0f}};
  const std::vector<std::vector<float>> f = allocate_read_fractions(p, {0}, 0.5, 0.25);
  ASSERT_EQ(f.size(), 1u);
  ASSERT_EQ(f[0].size(), 2u);
  EXPECT_NEAR((f[0][0] + f[0][1]) / 2, 0.5, 1e-6);
  EXPECT_GT(f[0][1], 0.5f);
  EXPECT_LT(f[0][0], 0.5f);
  EXPECT_GE(f[0][0], 0.25f);
  // Greedy gives the diffuse head 3 of 4 steps (0.25 / 0.75); the square-root temper: 0.366 / 0.634.
  EXPECT_NEAR(f[0][0], 0.5 * std::sqrt(0.5) / ((std::sqrt(0.5) + std::sqrt(1.5)) / 2), 1e-5);
  EXPECT_NEAR(allocate_read_fractions(p, {0}, 1.0, 0.25)[0][0], 1.0, 1e-6) << "a full budget reads everything";
  try {
    allocate_read_fractions(AttentionProfile{}, {0}, 0.5, 0.1);
    ADD_FAILURE() << "a profile without per-head curves was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no per-head read profile"), std::string::npos) << e.what();
  }
}

TEST(AutoSchedule, SelectSplitsReadsPerHeadAndKeepsBatchedEqualToSingle) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  ThreadPool pool(2);
  auto ids = m->tokenizer->encode(read_text_file(data_dir() + "/tinystories_valid_head.txt").substr(0, 6000), true);
  ids.resize(std::min<size_t>(ids.size(), 1024));
  Calibration cal = calibrate_model(*m, &pool, ids, 512, {}, 512, 0);
  ASSERT_EQ(cal.attention.read_steps, kReadSteps);
  ASSERT_EQ(cal.attention.head_read_mass.size(), 5u);
  const std::string path = ::testing::TempDir() + "/auto_select_" + std::to_string(::getpid()) + ".calib";
  cal.save(path);
  EXPECT_EQ(Calibration::load(path).attention.head_read_mass, cal.attention.head_read_mass);
  EngineConfig c = small_engine_config();
  c.compress.kv_sparse_mode = "select";
  c.compress.kv_select_index = "sketch";
  c.compress.kv_select_rank = 4;
  c.compress.kv_select_fraction = 0.25;
  c.compress.kv_sink_tokens = 4;
  c.compress.kv_recent_window = 16;
  c.compress.kv_sparse_schedule = "auto";
  c.compress.kv_calibration = path;
  const KvLayout layout = model_kv_layout(*m, 8, c.compress);
  double sum = 0, lo = 1e9, hi = 0;
  int32_t heads = 0;
  for (const KvLayerGeometry& g : layout.layers) {
    if (!g.select.on()) continue;
    ASSERT_EQ(static_cast<int32_t>(g.select.head_scale.size()), g.num_kv_heads);
    for (float x : g.select.head_scale) sum += x, ++heads, lo = std::min<double>(lo, x), hi = std::max<double>(hi, x);
  }
  ASSERT_EQ(heads, 5 * m->config.num_kv_heads);
  EXPECT_NEAR(sum / heads, 1.0, 1e-4) << "the same reads in all";
  EXPECT_LT(lo, hi) << "heads differ";
  const std::vector<TestRequest> jobs = patterned_requests(3, 150, 41, 29, 3, 60);
  const EngineRun batched = run_requests(*m, c, jobs);
  expect_each_alone_equal(*m, c, jobs, batched);
  EngineConfig uniform = c;  // the scales reach the kernels: the same mean budget, other rows read
  uniform.compress.kv_sparse_schedule = "uniform";
  EXPECT_NE(run_requests(*m, uniform, jobs).tokens, batched.tokens);
  Calibration old = cal;  // a calibration from before the per-head profile
  old.attention.head_read_mass.clear();
  old.attention.read_steps = 0;
  old.save(path);
  expect_engine_error<Engine>(*m, c, "no per-head read profile");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace slimkv::test
