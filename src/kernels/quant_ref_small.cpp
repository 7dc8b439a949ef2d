// Scalar references of the 32-value block types: Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4 and the Q8_1 activations.
// Dequantization follows GGML's dequantize_row_* exactly; dot products are exact integer sums per block.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/half.h"
#include "core/quant_blocks.h"
#include "kernels/quant_ref.h"

namespace slimkv::quant_ref {
namespace {


uint32_t read_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Value and largest |value| of a 32-value run, min and max.
struct Range {
  float amax = 0, max_signed = 0, lo = INFINITY, hi = -INFINITY;
};
Range range_of(const float* x, int n) {
  Range r;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > r.amax) { r.amax = std::fabs(x[j]); r.max_signed = x[j]; }
    r.lo = std::min(r.lo, x[j]);
    r.hi = std::max(r.hi, x[j]);
  }
  return r;
}

// Index of the table value nearest x.
int nearest_index(const int8_t* values, float x) {
  int best = 0;
  float err = INFINITY;
  for (int i = 0; i < 16; ++i) {
    const float e = std::fabs(x - values[i]);
    if (e < err) { err = e; best = i; }
  }
  return best;
}

// 32 signed table values of a 16-byte nibble block (low nibbles = values 0..15, high = 16..31).
void lut_values(const uint8_t* qs, const int8_t* table, int32_t* v) {
  for (int j = 0; j < 16; ++j) {
    v[j] = table[qs[j] & 0xF];
    v[j + 16] = table[qs[j] >> 4];
  }
}

}  // namespace

void dequant_q4_1(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i) {
    const Q4_1Block& b = as_blocks<Q4_1Block>(w)[i];
    const float d = fp16_to_fp32(b.d), m = fp16_to_fp32(b.m);
    for (int j = 0; j < 16; ++j) {
      y[i * 32 + j] = (b.qs[j] & 0x0F) * d + m;
      y[i * 32 + j + 16] = (b.qs[j] >> 4) * d + m;
    }
  }
}

void dequant_q5_0(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i) {
    const Q5_0Block& b = as_blocks<Q5_0Block>(w)[i];
    const float d = fp16_to_fp32(b.d);
    const uint32_t qh = read_u32(b.qh);
    for (int j = 0; j < 16; ++j) {
      const uint8_t xh0 = ((qh >> (j + 0)) << 4) & 0x10, xh1 = ((qh >> (j + 12))) & 0x10;
      y[i * 32 + j] = static_cast<float>(((b.qs[j] & 0x0F) | xh0) - 16) * d;
      y[i * 32 + j + 16] = static_cast<float>(((b.qs[j] >> 4) | xh1) - 16) * d;
    }
  }
}

void dequant_q5_1(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i) {
    const Q5_1Block& b = as_blocks<Q5_1Block>(w)[i];
    const float d = fp16_to_fp32(b.d), m = fp16_to_fp32(b.m);
    const uint32_t qh = read_u32(b.qh);
    for (int j = 0; j < 16; ++j) {
      const uint8_t xh0 = ((qh >> (j + 0)) << 4) & 0x10, xh1 = ((qh >> (j + 12))) & 0x10;
      y[i * 32 + j] = static_cast<float>((b.qs[j] & 0x0F) | xh0) * d + m;
      y[i * 32 + j + 16] = static_cast<float>((b.qs[j] >> 4) | xh1) * d + m;
    }
  }
}

void dequant_iq4_nl(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i) {
    const IQ4_NLBlock& b = as_blocks<IQ4_NLBlock>(w)[i];
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < 16; ++j) {
      y[i * 32 + j] = d * kIq4nlValues[b.qs[j] & 0xF];
      y[i * 32 + j + 16] = d * kIq4nlValues[b.qs[j] >> 4];
    }
  }
}

void dequant_mxfp4(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i) {
    const MXFP4Block& b = as_blocks<MXFP4Block>(w)[i];
    const float d = e8m0_half(b.e);
    for (int j = 0; j < 16; ++j) {
      y[i * 32 + j] = kMxfp4Values[b.qs[j] & 0xF] * d;
      y[i * 32 + j + 16] = kMxfp4Values[b.qs[j] >> 4] * d;
    }
  }
}

void dequant_q8_1(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i) {
    const Q8_1Block& b = as_blocks<Q8_1Block>(w)[i];
    for (int j = 0; j < 32; ++j) y[i * 32 + j] = fp16_to_fp32(b.d) * b.qs[j];
  }
}

void quantize_q4_1(const float* x, void* w, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i) {
    const float* b = x + i * 32;
    const Range r = range_of(b, 32);
    const float d = (r.hi - r.lo) / 15.0f, id = d ? 1.0f / d : 0.0f;
    Q4_1Block& q = as_blocks<Q4_1Block>(w)[i];
    q.d = fp32_to_fp16(d);
    q.m = fp32_to_fp16(r.lo);
    for (int j = 0; j < 16; ++j) {
      const int lo = std::min(15, static_cast<int>((b[j] - r.lo) * id + 0.5f));
      const int hi = std::min(15, static_cast<int>((b[j + 16] - r.lo) * id + 0.5f));
      q.qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

namespace {
template <typename B, bool kOffset>
void quantize_q5(const float* x, void* w, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i) {
    const float* b = x + i * 32;
    const Range r = range_of(b, 32);
    float d, m = 0;
    if constexpr (kOffset) {
      d = r.max_signed / -16.0f;
    } else {
      d = (r.hi - r.lo) / 31.0f;
      m = r.lo;
    }
    const float id = d ? 1.0f / d : 0.0f;
    B& q = as_blocks<B>(w)[i];
    q.d = fp32_to_fp16(d);
    if constexpr (!kOffset) q.m = fp32_to_fp16(m);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const float bias = kOffset ? 16.5f : 0.5f;
      const int x0 = std::clamp(static_cast<int>((b[j] - m) * id + bias), 0, 31);
      const int x1 = std::clamp(static_cast<int>((b[j + 16] - m) * id + bias), 0, 31);
      q.qs[j] = static_cast<uint8_t>((x0 & 0xF) | ((x1 & 0xF) << 4));
      qh |= static_cast<uint32_t>((x0 & 0x10) >> 4) << j;
      qh |= static_cast<uint32_t>((x1 & 0x10) >> 4) << (j + 16);
    }
    std::memcpy(q.qh, &qh, 4);
  }
}
}  // namespace

void quantize_q5_0(const float* x, void* w, int64_t n) { quantize_q5<Q5_0Block, true>(x, w, n); }
void quantize_q5_1(const float* x, void* w, int64_t n) { quantize_q5<Q5_1Block, false>(x, w, n); }

void quantize_iq4_nl(const float* x, void* w, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i) {
    const float* b = x + i * 32;
    const float d = range_of(b, 32).max_signed / -127.0f, id = d ? 1.0f / d : 0.0f;
    IQ4_NLBlock& q = as_blocks<IQ4_NLBlock>(w)[i];
    q.d = fp32_to_fp16(d);
    for (int j = 0; j < 16; ++j) {
      q.qs[j] = static_cast<uint8_t>(nearest_index(kIq4nlValues, b[j] * id) |
                                     (nearest_index(kIq4nlValues, b[j + 16] * id) << 4));
    }
  }
}

void quantize_mxfp4(const float* x, void* w, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i) {
    const float* b = x + i * 32;
    const float amax = range_of(b, 32).amax;
    const uint8_t e = amax > 0 ? static_cast<uint8_t>(std::clamp(std::floor(std::log2(amax)) - 2 + 127, 0.0f, 254.0f)) : 0;
    const float d = e8m0_half(e), id = 1.0f / d;
    MXFP4Block& q = as_blocks<MXFP4Block>(w)[i];
    q.e = e;
    for (int j = 0; j < 16; ++j) {
      q.qs[j] = static_cast<uint8_t>(nearest_index(kMxfp4Values, b[j] * id) |
                                     (nearest_index(kMxfp4Values, b[j + 16] * id) << 4));
    }
  }
}

void quantize_q8_1(const float* x, void* w, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i) {
    const float* b = x + i * 32;
    const float d = range_of(b, 32).amax / 127.0f, id = d ? 1.0f / d : 0.0f;
    Q8_1Block& q = as_blocks<Q8_1Block>(w)[i];
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) {
      q.qs[j] = static_cast<int8_t>(std::nearbyint(b[j] * id));
      sum += q.qs[j];
    }
    q.d = fp32_to_fp16(d);
    q.s = fp32_to_fp16(static_cast<float>(sum) * d);
  }
}

float dot_q4_1(const void* w, const void* x, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n / 32; ++i) {
    const Q4_1Block& a = as_blocks<Q4_1Block>(w)[i];
    const Q8_1Block& b = as_blocks<Q8_1Block>(x)[i];
    int32_t acc = 0;
    for (int j = 0; j < 16; ++j) acc += (a.qs[j] & 0xF) * b.qs[j] + (a.qs[j] >> 4) * b.qs[j + 16];
    s += fp16_to_fp32(a.d) * fp16_to_fp32(b.d) * static_cast<float>(acc) + fp16_to_fp32(a.m) * fp16_to_fp32(b.s);
  }
  return s;
}

namespace {
template <typename B, typename X>
float dot_q5(const void* w, const void* x, int64_t n) {
  constexpr bool kOffset = std::is_same_v<B, Q5_0Block>;
  float s = 0;
  for (int64_t i = 0; i < n / 32; ++i) {
    const B& a = as_blocks<B>(w)[i];
    const X& b = as_blocks<X>(x)[i];
    const uint32_t qh = read_u32(a.qh);
    int32_t acc = 0;
    for (int j = 0; j < 16; ++j) {
      const int x0 = (a.qs[j] & 0xF) | (((qh >> j) & 1) << 4), x1 = (a.qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
      acc += (x0 - (kOffset ? 16 : 0)) * b.qs[j] + (x1 - (kOffset ? 16 : 0)) * b.qs[j + 16];
    }
    s += fp16_to_fp32(a.d) * fp16_to_fp32(b.d) * static_cast<float>(acc);
    if constexpr (!kOffset) s += fp16_to_fp32(a.m) * fp16_to_fp32(b.s);
  }
  return s;
}

template <typename B>
float dot_lut(const void* w, const void* x, int64_t n, const int8_t* table) {
  float s = 0;
  int32_t v[32];
  for (int64_t i = 0; i < n / 32; ++i) {
    const B& a = as_blocks<B>(w)[i];
    const Q8_0Block& b = as_blocks<Q8_0Block>(x)[i];
    lut_values(a.qs, table, v);
    int32_t acc = 0;
    for (int j = 0; j < 32; ++j) acc += v[j] * b.qs[j];
    float da;
    if constexpr (std::is_same_v<B, MXFP4Block>) da = e8m0_half(a.e);
    else da = fp16_to_fp32(a.d);
    s += da * fp16_to_fp32(b.d) * static_cast<float>(acc);
  }
  return s;
}
}  // namespace

float dot_q5_0(const void* w, const void* x, int64_t n) { return dot_q5<Q5_0Block, Q8_0Block>(w, x, n); }
float dot_q5_1(const void* w, const void* x, int64_t n) { return dot_q5<Q5_1Block, Q8_1Block>(w, x, n); }
float dot_iq4_nl(const void* w, const void* x, int64_t n) { return dot_lut<IQ4_NLBlock>(w, x, n, kIq4nlValues); }
float dot_mxfp4(const void* w, const void* x, int64_t n) { return dot_lut<MXFP4Block>(w, x, n, kMxfp4Values); }

}  // namespace slimkv::quant_ref
