// Test helper: a random LoRA adapter GGUF over a model file, in llama.cpp's adapter format (general.type "adapter",
// adapter.type "lora", adapter.lora.alpha; `<weight>.lora_a` [in, r] and `.lora_b` [r, out] in ggml order).
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <regex>
#include <string>
#include <vector>

#include "formats/gguf_file.h"
#include "formats/gguf_writer.h"

namespace slimkv::test {

// A random rank-`rank` adapter over every projection of the model file (N(0, sd) entries), alpha `alpha`.
inline std::string write_adapter(const std::string& model_path, const std::string& tag, int32_t rank, float alpha,
                          uint32_t seed, float sd = 0.05f) {
  GgufFile base(model_path);
  GgufWriter w;
  w.add_string("general.architecture", base.get_string("general.architecture"));
  w.add_string("general.type", "adapter");
  w.add_string("adapter.type", "lora");
  w.add_f32("adapter.lora.alpha", alpha);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sd);
  static const std::regex target(R"(blk\.\d+\.(attn_q|attn_k|attn_v|attn_output|ffn_gate|ffn_up|ffn_down)\.weight|output\.weight)");
  for (const GgufTensorInfo& t : base.tensors()) {
    if (!std::regex_match(t.name, target) || t.dims.size() != 2) continue;
    std::vector<float> a(static_cast<size_t>(t.dims[0]) * rank), b(static_cast<size_t>(rank) * t.dims[1]);
    for (float& x : a) x = normal(rng);
    for (float& x : b) x = normal(rng);
    w.add_tensor(t.name + ".lora_a", DType::F32, {t.dims[0], rank}, a.data(), a.size() * sizeof(float));
    w.add_tensor(t.name + ".lora_b", DType::F32, {rank, t.dims[1]}, b.data(), b.size() * sizeof(float));
  }
  const std::string path = ::testing::TempDir() + "/lora-" + tag + "-" + std::to_string(::getpid()) + ".gguf";
  w.write(path);
  return path;
}

}  // namespace slimkv::test
