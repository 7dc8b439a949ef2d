#include "kernels/ops.h"

#include <cmath>
#include <cstring>

#include "core/check.h"
#include "kernels/dot.h"

namespace slimkv {

void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps) {
  float ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  ss = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = w[i] * (ss * x[i]);
}

void RopeTable::init(int32_t max_pos, int32_t head_dim_, int32_t rotary_dim_, float theta, RopeLayout layout_) {
  SLIMKV_CHECK(rotary_dim_ % 2 == 0 && rotary_dim_ <= head_dim_, "bad rotary dim {} for head dim {}", rotary_dim_,
               head_dim_);
  head_dim = head_dim_;
  rotary_dim = rotary_dim_;
  layout = layout_;
  const int32_t half = rotary_dim / 2;
  cos_.resize(static_cast<size_t>(max_pos) * half);
  sin_.resize(static_cast<size_t>(max_pos) * half);
  for (int32_t p = 0; p < max_pos; ++p) {
    for (int32_t i = 0; i < half; ++i) {
      double freq = 1.0 / std::pow(static_cast<double>(theta), (2.0 * i) / rotary_dim);
      double a = p * freq;
      cos_[static_cast<size_t>(p) * half + i] = static_cast<float>(std::cos(a));
      sin_[static_cast<size_t>(p) * half + i] = static_cast<float>(std::sin(a));
    }
  }
}

void RopeTable::apply(float* x, int32_t num_heads, int32_t pos) const {
  const int32_t half = rotary_dim / 2;
  const float* c = cos_.data() + static_cast<size_t>(pos) * half;
  const float* s = sin_.data() + static_cast<size_t>(pos) * half;
  for (int32_t h = 0; h < num_heads; ++h) {
    float* v = x + static_cast<size_t>(h) * head_dim;
    if (layout == RopeLayout::Interleaved) {
      for (int32_t i = 0; i < half; ++i) {
        float a = v[2 * i], b = v[2 * i + 1];
        v[2 * i] = a * c[i] - b * s[i];
        v[2 * i + 1] = a * s[i] + b * c[i];
      }
    } else {
      for (int32_t i = 0; i < half; ++i) {
        float a = v[i], b = v[i + half];
        v[i] = a * c[i] - b * s[i];
        v[i + half] = b * c[i] + a * s[i];
      }
    }
  }
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

void swiglu(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace slimkv
