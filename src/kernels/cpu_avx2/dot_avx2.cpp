// AVX2 + FMA + F16C dot kernels (compiled with -mavx2 -mfma -mf16c, used only when the CPU has them).
#include <immintrin.h>

#include <cmath>

#include "core/half.h"
#include "kernels/cpu_avx2/simd_avx2.h"
#include "kernels/dot.h"

namespace slimkv {
namespace {

using simd::hsum;

float dot_f32(const float* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(),
         acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  float s = hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

float dot_f16_f32(const uint16_t* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 a0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    __m256 a1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i + 8)));
    acc0 = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(a1, _mm256_loadu_ps(b + i + 8), acc1);
  }
  float s = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) s += fp16_to_fp32(a[i]) * b[i];
  return s;
}

// sum of products of 32 signed int8 pairs, as 8 int32 lanes (sign trick: |x| * sign(y, x)).
inline __m256i dot_i8x32(__m256i x, __m256i y) {
  __m256i ax = _mm256_sign_epi8(x, x);
  __m256i sy = _mm256_sign_epi8(y, x);
  __m256i p16 = _mm256_maddubs_epi16(ax, sy);
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

inline float half(uint16_t h) { return _cvtsh_ss(h); }

float dot_q8_0_q8_0(const Q8_0Block* a, const Q8_0Block* b, int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t k = 0; k < nb; ++k) {
    __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[k].qs));
    __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[k].qs));
    __m256 d = _mm256_set1_ps(half(a[k].d) * half(b[k].d));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8x32(x, y)), acc);
  }
  return hsum(acc);
}


float dot_q4_0_q8_0(const Q4_0Block* a, const Q8_0Block* b, int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t k = 0; k < nb; ++k) {
    __m256i x = simd::unpack_q4_0(a[k].qs);
    __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[k].qs));
    __m256 d = _mm256_set1_ps(half(a[k].d) * half(b[k].d));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8x32(x, y)), acc);
  }
  return hsum(acc);
}

void quantize_q8_0(const float* x, Q8_0Block* out, int64_t n) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  for (int64_t k = 0; k < n / 32; ++k) {
    const float* xb = x + k * 32;
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_loadu_ps(xb + 8 * j);
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_mask, v[j]));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    float d = _mm_cvtss_f32(m) / 127.0f;
    float id = d != 0 ? 1.0f / d : 0.0f;
    out[k].d = fp32_to_fp16(d);
    __m256 vid = _mm256_set1_ps(id);
    __m256i i32[4];
    for (int j = 0; j < 4; ++j) {
      i32[j] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[j], vid), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    __m256i i16a = _mm256_packs_epi32(i32[0], i32[1]);
    __m256i i16b = _mm256_packs_epi32(i32[2], i32[3]);
    __m256i i8 = _mm256_packs_epi16(i16a, i16b);
    i8 = _mm256_permutevar8x32_epi32(i8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[k].qs), i8);
  }
}

void axpy(float a, const float* x, float* y, int64_t n) {
  __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

}  // namespace

void attend_avx2(const float* q, const PagedKv& kv, int64_t num_ctx, float scale, float* scores,
                 float* out);  // attention_avx2.cpp
void attend_group_avx2(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx,
                       float scale, float* scores, int64_t s_stride, float* out, int64_t o_stride);

const DotKernels kAvx2Dot = {dot_f32, dot_f16_f32,       dot_q8_0_q8_0, dot_q4_0_q8_0, quantize_q8_0, axpy,
                             attend_avx2, attend_group_avx2, nullptr,    nullptr};

}  // namespace slimkv
