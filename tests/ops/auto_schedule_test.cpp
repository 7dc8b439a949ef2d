// --kv-sparse-schedule auto: `calibrate` measures each layer's retention sensitivity (stored with the attention
// profile, version 2 of the file), the engine turns it into per-layer budgets with the same total, and the engine
// stays batched == single with them; old or missing calibrations are clear errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include "engine_helpers.h"
#include "model/kv_projection.h"
#include "model_helpers.h"
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
  std::vector<TestRequest> jobs;
  for (int i = 0; i < 3; ++i) {
    TestRequest j;
    j.prompt = {1};
    for (int t = 0; t < 90 + 41 * i; ++t) j.prompt.push_back(3 + (t * 29 + i * 3) % 509);
    j.max_tokens = 100;
    jobs.push_back(j);
  }
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

}  // namespace
}  // namespace slimkv::test
