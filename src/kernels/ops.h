// Elementwise and per-head operations of a Llama layer: RMSNorm, RoPE (both layouts), softmax, SwiGLU,
// and causal attention of one query head over a contiguous run of cached keys/values.
// Must not know: where the KV cache lives (callers pass row pointers and strides).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/isa.h"

namespace slimkv {

// out[n] = x[n] / sqrt(mean(x^2) + eps) * w[n]
void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps);

enum class RopeLayout { Interleaved, RotateHalf };  // (x0,x1),(x2,x3)... vs (x_i, x_{i+d/2})

// Precomputed cos/sin per position: [max_pos, head_dim/2] each.
struct RopeTable {
  int32_t head_dim = 0, rotary_dim = 0;
  RopeLayout layout = RopeLayout::Interleaved;
  std::vector<float> cos_, sin_;  // [max_pos, rotary_dim/2]
  void init(int32_t max_pos, int32_t head_dim, int32_t rotary_dim, float theta, RopeLayout layout);
  // Rotates num_heads heads of head_dim floats each (contiguous) in place, at position pos.
  void apply(float* x, int32_t num_heads, int32_t pos) const;
  int32_t max_pos() const { return rotary_dim ? static_cast<int32_t>(cos_.size() / (rotary_dim / 2)) : 0; }
};

void softmax(float* x, int64_t n);
// gate[n] = silu(gate) * up
void swiglu(float* gate, const float* up, int64_t n);

}  // namespace slimkv
