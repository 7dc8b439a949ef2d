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
// out[n] = x / rms(x), no weight (DeepSeek-V4's per-head q norm and hyper-connection mixes; out may be x)
void rmsnorm_unweighted(float* out, const float* x, int64_t n, float eps);

void softmax(float* x, int64_t n);
// gate[n] = silu(gate) * up
void swiglu(float* gate, const float* up, int64_t n);
// GELU, tanh approximation
float gelu_tanh(float x);
// gate[n] = gelu_tanh(gate) * up (GeGLU). GELU is evaluated as ggml's CPU backend does it: the input rounded to
// f16, looked up in a table of f16 results (|x| >= 10 passes through): Gemma's logits then agree with llama.cpp's
// to ~1e-3 instead of ~5e-3 (the table's steps are below the model's own precision).
void geglu(float* gate, const float* up, int64_t n);
// out[n] = x[n] / sqrt(mean(x^2) + eps) * w[n], for each of num_rows rows of n (stride n)
void rmsnorm_rows(float* out, const float* x, const float* w, int64_t num_rows, int64_t n, float eps);
// x = cap * tanh(x / cap)
void softcap(float* x, int64_t n, float cap);
// y[r] += b for each of num_rows rows of n (a projection's bias); b null: nothing
void add_row_bias(float* y, const float* b, int64_t num_rows, int64_t n);

}  // namespace slimkv
