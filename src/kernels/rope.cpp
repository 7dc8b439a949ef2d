#include "kernels/rope.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace slimkv {
namespace {

// ggml_rope_yarn_corr_dim: the dimension whose wavelength makes n_rot turns over n_ctx_orig tokens.
float yarn_corr_dim(int32_t n_dims, int32_t n_ctx_orig, float n_rot, float base) {
  return n_dims * std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2 * static_cast<float>(M_PI))) /
         (2 * std::log(base));
}

float yarn_ramp(float low, float high, int32_t i0) {
  const float y = (static_cast<float>(i0 / 2) - low) / std::max(0.001f, high - low);
  return 1 - std::min(1.0f, std::max(0.0f, y));
}

}  // namespace

void RopeTable::init(int32_t max_pos, int32_t head_dim_, int32_t rotary_dim_, const RopeConfig& cfg,
                     RopeLayout layout_) {
  SLIMKV_CHECK(rotary_dim_ % 2 == 0 && rotary_dim_ <= head_dim_, "bad rotary dim {} for head dim {}", rotary_dim_,
               head_dim_);
  SLIMKV_CHECK(cfg.freq_factors.empty() || static_cast<int32_t>(cfg.freq_factors.size()) == rotary_dim_ / 2,
               "rope: {} frequency factors for rotary dim {}", cfg.freq_factors.size(), rotary_dim_);
  head_dim = head_dim_;
  rotary_dim = rotary_dim_;
  max_positions = max_pos;
  layout = layout_;
  config = cfg;
  cos_.clear();
  sin_.clear();
  corr_[0] = corr_[1] = 0;
  if (cfg.ext_factor != 0.0f) {  // ggml_rope_yarn_corr_dims with n_ctx_orig = the trained context
    const int32_t n_ctx_orig = cfg.orig_ctx > 0 ? cfg.orig_ctx : max_pos;
    corr_[0] = std::max(0.0f, std::floor(yarn_corr_dim(rotary_dim, n_ctx_orig, cfg.beta_fast, cfg.base)));
    corr_[1] = std::min(static_cast<float>(rotary_dim - 1),
                        std::ceil(yarn_corr_dim(rotary_dim, n_ctx_orig, cfg.beta_slow, cfg.base)));
  }
  ensure(std::min(max_pos, 256));
}

void RopeTable::ensure(int32_t n) {
  const int32_t have = max_pos();
  if (n <= have) return;
  SLIMKV_CHECK(n <= max_positions, "rope: position {} beyond the context of {}", n - 1, max_positions);
  const int32_t to = std::min(max_positions, std::max(n, 2 * have));
  const int32_t half = rotary_dim / 2;
  const RopeConfig& cfg = config;
  cos_.resize(static_cast<size_t>(to) * half);
  sin_.resize(static_cast<size_t>(to) * half);
  const float theta_scale = std::pow(cfg.base, -2.0f / static_cast<float>(rotary_dim));
  for (int32_t p = have; p < to; ++p) {
    float theta = static_cast<float>(p);
    for (int32_t i = 0; i < half; ++i) {
      const float ff = cfg.freq_factors.empty() ? 1.0f : cfg.freq_factors[i];
      const float theta_extrap = theta / ff;
      const float theta_interp = cfg.freq_scale * theta_extrap;
      float t = theta_interp, mscale = cfg.attn_factor;
      if (cfg.ext_factor != 0.0f) {  // ggml's rope_yarn
        const float ramp_mix = yarn_ramp(corr_[0], corr_[1], 2 * i) * cfg.ext_factor;
        t = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix;
        mscale *= 1.0f + 0.1f * std::log(1.0f / cfg.freq_scale);
      }
      cos_[static_cast<size_t>(p) * half + i] = std::cos(t) * mscale;
      sin_[static_cast<size_t>(p) * half + i] = std::sin(t) * mscale;
      theta *= theta_scale;
    }
  }
}

void RopeTable::apply(float* x, int32_t num_heads, int32_t pos, int32_t head_stride) const {
  const int32_t half = rotary_dim / 2;
  const int32_t stride = head_stride > 0 ? head_stride : head_dim;
  const float* c = cos_.data() + static_cast<size_t>(pos) * half;
  const float* s = sin_.data() + static_cast<size_t>(pos) * half;
  for (int32_t h = 0; h < num_heads; ++h) {
    float* v = x + static_cast<size_t>(h) * stride;
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
        v[i + half] = a * s[i] + b * c[i];
      }
    }
  }
}

}  // namespace slimkv
