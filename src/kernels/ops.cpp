#include "kernels/ops.h"

#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "kernels/dot.h"

namespace slimkv {

void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps) {
  float ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  ss = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = w[i] * (ss * x[i]);
}

void rmsnorm_unweighted(float* out, const float* x, int64_t n, float eps) {
  float ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  ss = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * ss;
}

void softmax(float* x, int64_t n) {
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void rmsnorm_rows(float* out, const float* x, const float* w, int64_t num_rows, int64_t n, float eps) {
  for (int64_t r = 0; r < num_rows; ++r) rmsnorm(out + r * n, x + r * n, w, n, eps);
}

float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f, kCoefA = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefA * x * x)));
}

namespace {

// GELU at every f16 input, rounded to f16: ggml's CPU backend evaluates GELU through this table (GGML_GELU_FP16),
// and so do llama.cpp's reference logits.
const std::vector<float>& gelu_f16_table() {
  static const std::vector<float> t = [] {
    std::vector<float> v(65536);
    for (uint32_t h = 0; h < 65536; ++h) v[h] = fp16_to_fp32(fp32_to_fp16(gelu_tanh(fp16_to_fp32(static_cast<uint16_t>(h)))));
    return v;
  }();
  return t;
}

}  // namespace

void geglu(float* gate, const float* up, int64_t n) {
  const std::vector<float>& table = gelu_f16_table();
  for (int64_t i = 0; i < n; ++i) {
    const float x = gate[i];
    const float g = x <= -10.0f ? 0.0f : x >= 10.0f ? x : table[fp32_to_fp16(x)];
    gate[i] = g * up[i];
  }
}

void softcap(float* x, int64_t n, float cap) {
  const float inv = 1.0f / cap;  // as ggml: scale, tanh, scale
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] * inv);
}

void swiglu(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void add_row_bias(float* y, const float* b, int64_t num_rows, int64_t n) {
  if (!b) return;
  for (int64_t r = 0; r < num_rows; ++r) {
    float* row = y + r * n;
    for (int64_t i = 0; i < n; ++i) row[i] += b[i];
  }
}

}  // namespace slimkv
