// RoPE variants the synthetic files do not carry, checked against llama.cpp at test time: copies of the synthetic
// GGUFs with llama3 per-dimension factors (`rope_freqs`), linear scaling, YaRN and a partial rotary dimension are
// written to the build folder, run through ../shared/bench-ref/llama.cpp/slimkv-ref, and slimkv's logits must match
// to 1e-3 at every position (Gemma: its file's criterion) and differ from the unscaled model's, so the variant is
// exercised. Skipped where the
// reference binary cannot run.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "formats/gguf_file.h"
#include "formats/gguf_writer.h"
#include "gguf_copy.h"
#include "reference_helpers.h"

namespace slimkv::test {
namespace {

// Rewrites a GGUF: every key (through `edit_kv`, which may add keys) and every tensor, plus `extra` tensors.
void copy_gguf(const std::string& src, const std::string& dst, const std::function<void(GgufWriter&)>& add_keys,
               const std::vector<std::tuple<std::string, std::vector<float>>>& extra_vectors = {}) {
  GgufFile g(src);
  GgufWriter w;
  copy_gguf_metadata(g, w);
  add_keys(w);
  for (const GgufTensorInfo& t : g.tensors()) w.add_tensor(t.name, t.dtype, t.dims, t.data, t.size_bytes);
  for (const auto& [name, v] : extra_vectors) {
    w.add_tensor(name, DType::F32, {static_cast<int64_t>(v.size())}, v.data(), v.size() * sizeof(float));
  }
  w.write(dst);
}

struct Variant {
  std::string name, base;
  std::function<void(GgufWriter&)> keys;
  std::vector<std::tuple<std::string, std::vector<float>>> tensors;
  double tolerance = 1e-3;
};

std::vector<Variant> variants() {
  std::mt19937 rng(5);
  std::vector<float> factors(32);
  for (auto& f : factors) f = 1.0f + static_cast<float>(rng() % 4000) / 100.0f;  // 1..41: strong on purpose
  return {
      {"llama3_rope_freqs", "llama/llama-f32", [](GgufWriter&) {}, {{"rope_freqs.weight", factors}}, 1e-3},
      {"linear_x4", "llama/llama-f32",
       [](GgufWriter& w) {
         w.add_string("llama.rope.scaling.type", "linear");
         w.add_f32("llama.rope.scaling.factor", 4.0f);
       },
       {}, 1e-3},
      {"yarn_x8", "qwen3/qwen3-f32",
       [](GgufWriter& w) {
         w.add_string("qwen3.rope.scaling.type", "yarn");
         w.add_f32("qwen3.rope.scaling.factor", 8.0f);
         w.add_u32("qwen3.rope.scaling.original_context_length", 256);
       },
       {}, 1e-3},
      // Of these families llama.cpp allows n_rot < head size only for gemma3 (its GELU table: the file's 6.1e-3).
      {"partial_rotary_32", "gemma3/gemma3-f32", [](GgufWriter& w) { w.add_u32("gemma3.rope.dimension_count", 32); },
       {}, 6.1e-3},
  };
}

class RopeVariants : public ::testing::TestWithParam<Variant> {};

TEST_P(RopeVariants, MatchLlamaCpp) {
  const Variant& v = GetParam();
  const std::string base = synthetic_dir() + "/" + v.base + ".gguf";
  SKIP_IF_MISSING(base);
  const std::string ref_bin = slimkv_ref_binary();
  if (ref_bin.empty()) GTEST_SKIP() << "llama.cpp reference binary not runnable here";
  const std::string prefix = ::testing::TempDir() + "/rope_" + v.name + "_" + std::to_string(::getpid());
  copy_gguf(base, prefix + ".gguf", v.keys, v.tensors);
  const std::string ids_file = synthetic_dir() + "/prompts/p64.ids";
  const std::string cmd = ref_bin + " " + prefix + ".gguf " + ids_file + " " + prefix + " >" + prefix + ".log 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    GTEST_SKIP() << "llama.cpp refused this variant: " << read_text_file(prefix + ".log");
  }
  auto m = load(prefix + ".gguf");
  auto plain = load(base);
  const std::vector<int32_t> ids = read_ids_file(ids_file);
  const std::vector<float> ours = all_logits(*m, ids, 0);
  const LogitsDiff d = compare_logits(ours, read_f32_file(prefix + ".logits.f32"), 512);
  const LogitsDiff changed = compare_logits(ours, all_logits(*plain, ids, 0), 512);
  std::printf("%s: vs llama.cpp max |dlogit| %.3g; vs the unscaled model %.3g\n", v.name.c_str(), d.worst(),
              changed.worst());
  EXPECT_LE(d.worst(), v.tolerance);
  EXPECT_GT(changed.worst(), 1e-2) << "the variant should change the logits";
  for (const char* ext : {".gguf", ".logits.f32", ".log"}) std::remove((prefix + ext).c_str());
}

INSTANTIATE_TEST_SUITE_P(Synthetic, RopeVariants, ::testing::ValuesIn(variants()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace slimkv::test
