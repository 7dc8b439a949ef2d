// Low-rank K/V: calibration files round-trip and are bound to their model; latents keep batched == single and
// block integrity; full-rank bases reproduce the uncompressed output; configuration errors are clear.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "compress/calibration.h"
#include "engine/engine.h"
#include "model/kv_projection.h"
#include "engine_helpers.h"
#include "model_helpers.h"

namespace slimkv::test {
namespace {


std::string calibrate(const Model& m, const std::string& name) {
  SequenceForward fwd(m, nullptr, 512);
  KvCovariance cov(m.config.num_layers, m.config.num_kv_heads, m.config.head_dim);
  fwd.forward_pass().set_kv_observer([&](int32_t l, const float* k, const float* v, int32_t T) { cov.add(l, k, v, T); });
  auto ids = m.tokenizer->encode(read_text_file(data_dir() + "/tinystories_valid_head.txt").substr(3000, 6000), true);
  ids.resize(std::min<size_t>(ids.size(), 512));
  std::vector<float> logits(m.config.vocab_size);
  fwd.forward(ids, 0, false, logits.data());
  std::string path = ::testing::TempDir() + "/" + name + std::to_string(::getpid()) + ".calib";
  Calibration::from_covariance(cov, model_fingerprint(m)).save(path);
  return path;
}

TEST(LowRank, CalibrationRoundTripsAndItsBasesAreOrthonormal) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  std::string path = calibrate(*m, "rt");
  Calibration c = Calibration::load(path);
  EXPECT_EQ(c.model_fingerprint, model_fingerprint(*m));
  EXPECT_EQ(c.head_dim, 8);
  const float* b = c.k_basis.data();  // layer 0, head 0: rows are orthonormal eigenvectors
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      double d = 0;
      for (int x = 0; x < 8; ++x) d += double(b[i * 8 + x]) * b[j * 8 + x];
      EXPECT_NEAR(d, i == j ? 1.0 : 0.0, 1e-4);
    }
  }
  EXPECT_GE(c.k_eig[0], c.k_eig[7]);  // largest first
  EXPECT_NEAR(c.explained(0, 8, true), 1.0, 1e-9);
  // Truncated or foreign files are clear errors.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 4);
  EXPECT_THROW(Calibration::load(path), Error);
  std::filesystem::remove(path);
}

EngineConfig low_rank_cfg(const std::string& calib, int32_t rank_k, int32_t rank_v, const std::string& dtype) {
  EngineConfig c = small_engine_config();
  c.sched.max_num_batched_tokens = 48;
  c.compress.kv_cache_dtype = dtype;
  c.compress.kv_compression_rank_k = rank_k;
  c.compress.kv_compression_rank_v = rank_v;
  c.compress.kv_calibration = calib;
  return c;
}


std::vector<std::vector<int32_t>> run(const Model& m, const EngineConfig& cfg,
                                      const std::vector<std::vector<int32_t>>& ps) {
  return run_prompts(m, cfg, ps, 12).tokens;
}

TEST(LowRank, LatentsKeepBatchedEqualToSingleAndFreeEverything) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  std::string calib = calibrate(*m, "batch");
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> p = {1};
    for (int j = 0; j < 20 + 37 * i; ++j) p.push_back(3 + (j * 31 + i * 7) % 509);
    prompts.push_back(p);
  }
  for (auto [rk, rv, dt] : {std::tuple{4, 4, "f32"}, std::tuple{8, 4, "int8"}}) {
    EngineConfig c = low_rank_cfg(calib, rk, rv, dt);
    auto batched = run(*m, c, prompts);
    c.sched.max_num_seqs = 1;
    for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(run(*m, c, {prompts[i]})[0], batched[i]);
  }
  std::filesystem::remove(calib);
}

TEST(LowRank, ConfigurationErrorsAreClear) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  std::string calib = calibrate(*m, "err");
  auto expect_error = [&](const EngineConfig& c, const std::string& needle) {
    expect_engine_error<Engine>(*m, c, needle);
  };
  expect_error(low_rank_cfg(calib, 16, 4, "f32"), "must be in 1..8");  // rank > head dim
  expect_error(low_rank_cfg("", 4, 4, "f32"), "needs a calibration file");
  EngineConfig c = low_rank_cfg(calib, 0, 0, "f32");
  c.compress.kv_layer_compress_ratio = {1, 1, 2, 2};
  expect_error(c, "has 4 entries but the model has 5 layers");
  c.compress.kv_layer_compress_ratio = {1, 1, 2, 2, 3};
  expect_error(c, "must divide the head dim");
  c = low_rank_cfg(calib, 4, 4, "f32");
  auto other = load(models_dir() + "/aidreams260K/aidreams260K.bin");  // another model (4 layers, head dim 16)
  try {
    Engine e(*other, c);
    ADD_FAILURE() << "expected a calibration/model mismatch";
  } catch (const Error& err) {
    EXPECT_TRUE(std::string(err.what()).find("another model") != std::string::npos ||
                std::string(err.what()).find("calibration") != std::string::npos) << err.what();
  }
  std::filesystem::remove(calib);
}

}  // namespace
}  // namespace slimkv::test
