// Elementwise and per-row operations of a decoder layer: RMSNorm, softmax, SwiGLU / GeGLU, logit softcap
// (RoPE: kernels/rope.h).
// Must not know: where the KV cache lives (callers pass row pointers and strides).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/isa.h"
#include "kernels/rope.h"

namespace slimkv {

// out[n] = x[n] / sqrt(mean(x^2) + eps) * w[n]
void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps);

void softmax(float* x, int64_t n);
// gate[n] = silu(gate) * up
void swiglu(float* gate, const float* up, int64_t n);
// gate[n] = gelu_tanh(gate) * up (GeGLU, the tanh approximation)
void geglu(float* gate, const float* up, int64_t n);
// out[n] = x[n] / sqrt(mean(x^2) + eps) * w[n], for each of num_rows rows of n (stride n)
void rmsnorm_rows(float* out, const float* x, const float* w, int64_t num_rows, int64_t n, float eps);
// x = cap * tanh(x / cap)
void softcap(float* x, int64_t n, float cap);

}  // namespace slimkv
