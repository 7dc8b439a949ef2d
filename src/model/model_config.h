// Llama hyper-parameters, read from any format and validated once.
// Must not know: file formats or weights.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/ops.h"

namespace slimkv {

struct ModelConfig {
  int32_t dim = 0;           // embedding width
  int32_t hidden_dim = 0;    // FFN width
  int32_t num_layers = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t rotary_dim = 0;    // dims rotated by RoPE (= head_dim for Llama)
  int32_t vocab_size = 0;
  int32_t max_seq_len = 0;   // trained context, in tokens
  float rope_theta = 10000.0f;
  float rms_eps = 1e-5f;
  RopeLayout rope_layout = RopeLayout::Interleaved;
  std::string format;        // "llama2c", "gguf v3", "safetensors"

  int32_t q_dim() const { return num_heads * head_dim; }
  int32_t kv_dim() const { return num_kv_heads * head_dim; }
  void validate() const;     // throws Error naming the offending field
  std::string summary() const;
};

}  // namespace slimkv
