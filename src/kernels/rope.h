// Rotary position embeddings as ggml computes them (rope_ext): NORM (adjacent pairs) and NEOX (rotate half)
// layouts, partial rotary dims, linear frequency scaling, per-dimension frequency factors (llama3) and YaRN.
// A table of cos/sin per position is built once per distinct configuration.
// Must not know: which model or layer uses it.
#pragma once
#include <cstdint>
#include <vector>

namespace slimkv {

enum class RopeLayout { Interleaved, RotateHalf };  // NORM: (x0,x1),(x2,x3)...  NEOX: (x_i, x_{i+n_rot/2})

// theta_i = pos * base^(-2i/n_rot) / freq_factors[i] (then YaRN-mixed with theta * freq_scale).
struct RopeConfig {
  float base = 10000.0f;
  float freq_scale = 1.0f;          // 1 / linear (or YaRN) scaling factor
  float ext_factor = 0.0f;          // YaRN: 0 = off, 1 = on
  float attn_factor = 1.0f;         // magnitude multiplier of cos/sin
  float beta_fast = 32.0f, beta_slow = 1.0f;
  int32_t orig_ctx = 0;             // YaRN: the trained context the correction dims are computed for
  std::vector<float> freq_factors;  // [rotary_dim / 2] per-dimension divisors (llama3 `rope_freqs`), or empty
  bool operator==(const RopeConfig&) const = default;
};

// Precomputed cos/sin per position, in ggml's float arithmetic (theta advanced by repeated multiplication), so
// long positions agree with llama.cpp. Positions are computed as needed (ensure), up to the model's context.
struct RopeTable {
  int32_t head_dim = 0, rotary_dim = 0;
  int32_t max_positions = 0;      // the model's context: the most ensure() computes
  RopeLayout layout = RopeLayout::Interleaved;
  RopeConfig config;
  float corr_[2] = {0, 0};        // YaRN correction dims
  std::vector<float> cos_, sin_;  // [computed positions, rotary_dim/2]
  // Up to 256 positions are computed at once; the rest on demand.
  void init(int32_t max_pos, int32_t head_dim, int32_t rotary_dim, const RopeConfig& config, RopeLayout layout);
  // Makes positions [0, n) available (n <= max_positions); grows by at least doubling.
  void ensure(int32_t n);
  void init(int32_t max_pos, int32_t head_dim, int32_t rotary_dim, float theta, RopeLayout layout) {
    RopeConfig c;
    c.base = theta;
    init(max_pos, head_dim, rotary_dim, c, layout);
  }
  // Rotates num_heads heads (head_stride floats apart; 0 = head_dim) in place, at position pos.
  void apply(float* x, int32_t num_heads, int32_t pos, int32_t head_stride = 0) const;
  int32_t max_pos() const { return rotary_dim ? static_cast<int32_t>(cos_.size() / (rotary_dim / 2)) : 0; }
};

}  // namespace slimkv
