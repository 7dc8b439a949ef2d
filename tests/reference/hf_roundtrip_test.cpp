// Safetensors round trip per family: the synthetic GGUF written as a Hugging Face checkpoint (HF names, HF layouts:
// rotate-half q/k rows for llama, (w - 1) Gemma norms, one tensor per expert; one family sharded) loads through the
// HF path of the same family file and gives the GGUF model's logits.
#include <gtest/gtest.h>

#include "hf_export.h"
#include "reference_helpers.h"

namespace slimkv::test {
namespace {

class HfRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(HfRoundTrip, SameLogitsAsTheGguf) {
  const std::string gguf = synthetic_dir() + "/" + GetParam() + ".gguf";
  SKIP_IF_MISSING(gguf);
  auto m = load(gguf);
  const std::string dir = ::testing::TempDir() + "/hf_" + m->config.family + "_" + std::to_string(::getpid());
  const int shards = m->config.family == "qwen3moe" ? 3 : 1;
  export_hf(gguf, *m, dir, shards);
  auto h = load(dir);
  EXPECT_EQ(h->config.family, m->config.family);
  EXPECT_EQ(h->config.format, "safetensors");
  EXPECT_EQ(h->config.rope_layout, m->config.rope_layout);
  const std::vector<int32_t> ids = read_ids_file(synthetic_dir() + "/prompts/p64.ids");
  const LogitsDiff d = compare_logits(all_logits(*h, ids, 0), all_logits(*m, ids, 0), m->config.vocab_size);
  std::printf("%s: HF vs GGUF max |dlogit| %.3g\n", GetParam().c_str(), d.worst());
  // MLA: k_b is rebuilt by transposing kv_b (same values); other families bit-identical.
  EXPECT_LE(d.worst(), 1e-4);
  EXPECT_EQ(d.argmax_agree, 1.0);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Families, HfRoundTrip,
                         ::testing::Values("llama/llama-f32", "llama/llama-tied-f32", "qwen2/qwen2-f32",
                                           "qwen3/qwen3-f32", "qwen3moe/qwen3moe-f32", "gemma3/gemma3-f32",
                                           "phi3/phi3-f32", "deepseek2/deepseek2-v3-F32",
                                           "deepseek2/deepseek2-lite-F32", "deepseek4/deepseek4-F32"),
                         [](const auto& info) {
                           std::string s = info.param.substr(info.param.find('/') + 1);
                           for (auto& ch : s) if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

}  // namespace
}  // namespace slimkv::test
