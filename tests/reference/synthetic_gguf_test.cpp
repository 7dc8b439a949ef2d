// `slimkv bench make-gguf`'s files are what llama.cpp runs in the side-by-side benchmarks, so each architecture the
// writer knows is checked against llama.cpp at test time: a small shape of it (llama-260k: llama; deepseek-v4-tiny:
// deepseek4 with every layer kind — window-only with hash routing, CSA with the indexer, HCA) is written as F32,
// run through ../shared/bench-ref/llama.cpp/slimkv-ref on the 320-token prompt, and slimkv's logits on the same file
// must match: max |dlogit| <= 1e-3 at 90% of positions (the synthetic DeepSeek files' criterion: top-k choices can
// flip at near-ties) and the argmax at 95%. llama.cpp refusing a file is a failure: the writer is wrong.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>

#include "model/synthetic_gguf.h"
#include "model/synthetic_model.h"
#include "reference_helpers.h"

namespace slimkv::test {
namespace {

class SyntheticGguf : public ::testing::TestWithParam<std::string> {};

TEST_P(SyntheticGguf, LlamaCppRunsItAndAgrees) {
  const std::string shape = GetParam();
  const std::string ids_file = synthetic_dir() + "/prompts/p320.ids";
  SKIP_IF_MISSING(ids_file);
  const std::string ref_bin = slimkv_ref_binary();
  if (ref_bin.empty()) GTEST_SKIP() << "llama.cpp reference binary not runnable here";
  const std::string prefix = ::testing::TempDir() + "/synthetic_" + shape + "_" + std::to_string(::getpid());
  write_synthetic_gguf(shape, DType::F32, prefix + ".gguf");
  const std::string cmd = ref_bin + " " + prefix + ".gguf " + ids_file + " " + prefix + " >" + prefix + ".log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "llama.cpp refused the written file:\n" << read_text_file(prefix + ".log");

  auto m = load(prefix + ".gguf");
  const ModelConfig want = synthetic_shape(shape);
  ASSERT_EQ(m->config.num_layers, want.num_layers);
  EXPECT_EQ(m->config.dim, want.dim);
  EXPECT_EQ(m->config.vocab_size, want.vocab_size);
  EXPECT_EQ(m->config.moe.num_hash_layers, want.moe.num_hash_layers);
  for (int32_t l = 0; l < want.num_layers; ++l) {
    EXPECT_EQ(m->config.layers[l].compress_ratio, want.layers[l].compress_ratio) << "layer " << l;
  }
  const std::vector<int32_t> ids = read_ids_file(ids_file);
  ThreadPool pool(2);
  const LogitsDiff d = compare_logits(all_logits(*m, ids, 0, &pool), read_f32_file(prefix + ".logits.f32"),
                                      want.vocab_size);
  std::printf("%s: vs llama.cpp max |dlogit| %.3g, q90 %.3g, argmax %.4f\n", shape.c_str(), d.worst(),
              d.quantile(0.9), d.argmax_agree);
  EXPECT_LE(d.quantile(0.9), 1e-3);
  EXPECT_GE(d.argmax_agree, 0.95);
  for (const char* ext : {".gguf", ".logits.f32", ".greedy.json", ".log"}) std::remove((prefix + ext).c_str());
}

INSTANTIATE_TEST_SUITE_P(Shapes, SyntheticGguf, ::testing::Values("llama-260k", "deepseek-v4-tiny"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

}  // namespace
}  // namespace slimkv::test
