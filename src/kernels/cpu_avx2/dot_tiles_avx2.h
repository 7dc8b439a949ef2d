// AVX2 dot products of one weight row with TT token rows at once (F32, F16, Q8_0, Q4_0 weights): each weight chunk
// is loaded (and widened or unpacked) once for all TT tokens, and each token keeps its own accumulators with exactly
// the single dot product's operations in its order — the dot product *is* the TT = 1 tile, so a matmul of any
// batch equals one dot per (row, token), bit for bit. Include only from dot_avx2.cpp (built with -mavx2 -mfma
// -mf16c).
#pragma once
#include <immintrin.h>

#include "core/half.h"
#include "core/quant_blocks.h"
#include "kernels/cpu_avx2/simd_avx2.h"

namespace slimkv::avx2 {

// out[t] = a[0, n) . b[t * ldb + (0, n)], t < TT. Four 8-lane accumulators a token, as dot_f32 always had.
template <int TT>
inline void tile_f32(const float* a, const float* b, int64_t ldb, int64_t n, float* out) {
  __m256 acc[TT][4];
  #pragma GCC unroll 8
  for (int t = 0; t < TT; ++t) {
    #pragma GCC unroll 8
    for (int j = 0; j < 4; ++j) acc[t][j] = _mm256_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    #pragma GCC unroll 8
    for (int j = 0; j < 4; ++j) {
      const __m256 w = _mm256_loadu_ps(a + i + 8 * j);
      #pragma GCC unroll 8
      for (int t = 0; t < TT; ++t) acc[t][j] = _mm256_fmadd_ps(w, _mm256_loadu_ps(b + t * ldb + i + 8 * j), acc[t][j]);
    }
  }
  const int64_t vec_end = i + (n - i) / 8 * 8;
  for (; i < vec_end; i += 8) {
    const __m256 w = _mm256_loadu_ps(a + i);
    #pragma GCC unroll 8
    for (int t = 0; t < TT; ++t) acc[t][0] = _mm256_fmadd_ps(w, _mm256_loadu_ps(b + t * ldb + i), acc[t][0]);
  }
  #pragma GCC unroll 8
  for (int t = 0; t < TT; ++t) {
    float s = simd::hsum(_mm256_add_ps(_mm256_add_ps(acc[t][0], acc[t][1]), _mm256_add_ps(acc[t][2], acc[t][3])));
    for (int64_t k = vec_end; k < n; ++k) s += a[k] * b[t * ldb + k];
    out[t] = s;
  }
}

// F16 weights widened exactly, f32 tokens; two accumulators a token (16 values a step), as dot_f16_f32 always had.
template <int TT>
inline void tile_f16(const uint16_t* a, const float* b, int64_t ldb, int64_t n, float* out) {
  __m256 acc0[TT], acc1[TT];
  #pragma GCC unroll 8
  for (int t = 0; t < TT; ++t) acc0[t] = acc1[t] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 a1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i + 8)));
    #pragma GCC unroll 8
    for (int t = 0; t < TT; ++t) {
      acc0[t] = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b + t * ldb + i), acc0[t]);
      acc1[t] = _mm256_fmadd_ps(a1, _mm256_loadu_ps(b + t * ldb + i + 8), acc1[t]);
    }
  }
  #pragma GCC unroll 8
  for (int t = 0; t < TT; ++t) {
    float s = simd::hsum(_mm256_add_ps(acc0[t], acc1[t]));
    for (int64_t k = i; k < n; ++k) s += fp16_to_fp32(a[k]) * b[t * ldb + k];
    out[t] = s;
  }
}

// Q8_0 / Q4_0 weights x Q8_0 tokens (b[t * ldb + k] is token t's block k): per block, the integer dot of 32 int8
// pairs (|x| * sign(y, x), the weights' |x| shared by every token), scaled by d_w * d_x, one accumulator a token.
template <int TT, bool kQ4>
inline void tile_q8(const void* w, const Q8_0Block* b, int64_t ldb, int64_t nb, float* out) {
  __m256 acc[TT];
  #pragma GCC unroll 8
  for (int t = 0; t < TT; ++t) acc[t] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t k = 0; k < nb; ++k) {
    __m256i x;
    float dw;
    if constexpr (kQ4) {
      const Q4_0Block& blk = static_cast<const Q4_0Block*>(w)[k];
      x = simd::unpack_q4_0(blk.qs);
      dw = _cvtsh_ss(blk.d);
    } else {
      const Q8_0Block& blk = static_cast<const Q8_0Block*>(w)[k];
      x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs));
      dw = _cvtsh_ss(blk.d);
    }
    const __m256i ax = _mm256_sign_epi8(x, x);
    #pragma GCC unroll 8
    for (int t = 0; t < TT; ++t) {
      const Q8_0Block& bk = b[t * ldb + k];
      const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bk.qs));
      const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(y, x)), ones);
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * _cvtsh_ss(bk.d)), _mm256_cvtepi32_ps(p), acc[t]);
    }
  }
  #pragma GCC unroll 8
  for (int t = 0; t < TT; ++t) out[t] = simd::hsum(acc[t]);
}

}  // namespace slimkv::avx2
