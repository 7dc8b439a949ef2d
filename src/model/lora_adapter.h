// A LoRA adapter over a loaded model, as llama.cpp's convert_lora_to_gguf writes it (general.type "adapter",
// adapter.type "lora", adapter.lora.alpha; per target `<weight>.lora_a` ggml [in, r] and `.lora_b` [r, out]): each
// target's A and B in f32 and its scale (alpha / r x the user's scale; alpha 0: the user's scale, as llama.cpp),
// keyed by the base weight's data so the matmul that reads the weight adds scale · B (A x) (model/lora_ops.h).
// Targets: every layer's attention and dense FFN projections and the output head; others are refused by name.
// Must not know: requests, the engine or HTTP.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/model.h"

namespace slimkv {

constexpr int32_t kMaxLoraRank = 256;  // higher ranks are refused at load

struct LoraTarget {
  std::string tensor;          // the base weight's GGUF name
  bool is_output = false;      // the output head (its rows are logits rows, not the step's tokens)
  int32_t rank = 0, in = 0, out = 0;
  std::vector<float> a;        // [rank, in]
  std::vector<float> b;        // [out, rank]
  float scale = 1.0f;
};

struct LoraAdapter {
  std::string name, path;
  float alpha = 0.0f, user_scale = 1.0f;
  uint64_t fingerprint = 0;    // of the file's bytes and the scale: the prefix cache's root for its sequences
  std::unordered_map<const void*, LoraTarget> targets;  // base WeightView::data -> its update
};

// Loads `path` for `model`; throws Error naming the file and the problem (not an adapter, another architecture,
// an unknown or unsupported target, shapes that do not fit the base weight, a tensor-parallel model).
std::shared_ptr<const LoraAdapter> load_lora_adapter(const Model& model, const std::string& name,
                                                     const std::string& path, float user_scale = 1.0f);

}  // namespace slimkv
