// The blocks the AVX2 attention walks share: softmax numerators, 8 rows scored at once, value rows added into a
// GQA group's register accumulators, the final normalisation. Include only from files built with -mavx2 -mfma.
#pragma once
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "kernels/cpu_avx2/simd_avx2.h"

namespace slimkv {

__m256 exp256_ps(__m256 x);  // attention_avx2.cpp

namespace simd {

// Softmax numerators in place (exp(s - max)); returns their sum.
inline float exp_shifted(float* s, int64_t n, float mx) {
  __m256 vmx = _mm256_set1_ps(mx), acc = _mm256_setzero_ps();
  int64_t t = 0;
  for (; t + 8 <= n; t += 8) {
    __m256 e = exp256_ps(_mm256_sub_ps(_mm256_loadu_ps(s + t), vmx));
    _mm256_storeu_ps(s + t, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = hsum(acc);
  for (; t < n; ++t) {
    s[t] = std::exp(s[t] - mx);
    sum += s[t];
  }
  return sum;
}

// Scores of 8 consecutive rows at once: 8 accumulators, then one transpose-reduce (hadd tree) instead of 8
// horizontal sums. Rows are `stride` floats apart; head_dim % 8 == 0.
inline __m256 dot8_rows(const float* q, const float* k, int64_t stride, int32_t head_dim) {
  __m256 a[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) a[i] = _mm256_setzero_ps();
  for (int32_t j = 0; j < head_dim; j += 8) {
    const __m256 qv = _mm256_loadu_ps(q + j);
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) a[i] = _mm256_fmadd_ps(_mm256_loadu_ps(k + i * stride + j), qv, a[i]);
  }
  return reduce8(a);
}

// out[h] += sum over the n value rows starting at v (row_floats apart) of p[h][k] * row k, for every head of the
// group; a head's accumulators stay in registers for the n rows and in out between calls (exact: the order of
// operations is a plain row walk's). NV × 8 = v_dim.
template <int NV>
inline void add_value_rows(const float* v, int64_t row_floats, int64_t n, const float* p, int64_t p_stride, int32_t num_q,
                    float* out, int64_t o_stride) {
  for (int32_t h = 0; h < num_q; ++h) {
    __m256 acc[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) acc[j] = _mm256_loadu_ps(out + h * o_stride + 8 * j);
    const float* vr = v;
    for (int64_t i = 0; i < n; ++i, vr += row_floats) {
      const __m256 pv = _mm256_set1_ps(p[h * p_stride + i]);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[j] = _mm256_fmadd_ps(pv, _mm256_loadu_ps(vr + 8 * j), acc[j]);
    }
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) _mm256_storeu_ps(out + h * o_stride + 8 * j, acc[j]);
  }
}

// out[h, 0:vd] *= inv[h] for the num_q rows (vd % 8 == 0): the softmax normalisation, once per head.
inline void scale_rows(float* out, int64_t o_stride, int32_t num_q, int32_t vd, const float* inv) {
  for (int32_t h = 0; h < num_q; ++h) {
    const __m256 vinv = _mm256_set1_ps(inv[h]);
    for (int32_t j = 0; j < vd; j += 8) {
      _mm256_storeu_ps(out + h * o_stride + j, _mm256_mul_ps(_mm256_loadu_ps(out + h * o_stride + j), vinv));
    }
  }
}

}  // namespace simd
}  // namespace slimkv
