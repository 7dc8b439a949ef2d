// Random-weight models of realistic shapes (llama2.c stories15M / stories110M, Llama-3.2-1B / 3.1-8B, Qwen3-MoE and
// DeepSeek-V2 / V4 layers, a tiny DeepSeek-V4 for tests) for speed work.
// Quality numbers on them mean nothing; speed numbers do. Must not know: tokenizers (they have none).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/model.h"

namespace slimkv {

ModelConfig synthetic_shape(const std::string& name);  // one of synthetic_shape_names()
std::vector<std::string> synthetic_shape_names();
// Seeded N(0, 0.02) weights stored as `dtype` (F32, F16, Q8_0 or Q4_0); norms are ones.
std::unique_ptr<Model> make_synthetic_model(const std::string& shape, DType dtype, uint64_t seed = 1);

}  // namespace slimkv
