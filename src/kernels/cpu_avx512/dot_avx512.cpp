// AVX-512 (F, BW, VL, VNNI) dot kernels: 16-wide float FMAs and VNNI int8 dot products.
// Quantization and attention reuse the AVX2 versions.
#include <immintrin.h>

#include "core/half.h"
#include "kernels/cpu_avx2/simd_avx2.h"
#include "kernels/dot.h"

namespace slimkv {
namespace {

float dot_f32(const float* a, const float* b, int64_t n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), acc1);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
  if (i < n) {
    __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    acc1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

float dot_f16_f32(const uint16_t* a, const float* b, int64_t n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i))),
                           _mm512_loadu_ps(b + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i + 16))),
                           _mm512_loadu_ps(b + i + 16), acc1);
  }
  if (i + 16 <= n) {
    acc0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i))),
                           _mm512_loadu_ps(b + i), acc0);
    i += 16;
  }
  float s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
  for (; i < n; ++i) s += fp16_to_fp32(a[i]) * b[i];
  return s;
}

inline __m256i dot_i8x32_vnni(__m256i x, __m256i y) {
  __m256i ax = _mm256_sign_epi8(x, x);
  __m256i sy = _mm256_sign_epi8(y, x);
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), ax, sy);
}

float dot_q8_0_q8_0(const Q8_0Block* a, const Q8_0Block* b, int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t k = 0; k < nb; ++k) {
    __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[k].qs));
    __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[k].qs));
    __m256 d = _mm256_set1_ps(_cvtsh_ss(a[k].d) * _cvtsh_ss(b[k].d));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8x32_vnni(x, y)), acc);
  }
  return simd::hsum(acc);
}

float dot_q4_0_q8_0(const Q4_0Block* a, const Q8_0Block* b, int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t k = 0; k < nb; ++k) {
    __m256i x = simd::unpack_q4_0(a[k].qs);
    __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[k].qs));
    __m256 d = _mm256_set1_ps(_cvtsh_ss(a[k].d) * _cvtsh_ss(b[k].d));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8x32_vnni(x, y)), acc);
  }
  return simd::hsum(acc);
}

void axpy(float a, const float* x, float* y, int64_t n) {
  __m512 va = _mm512_set1_ps(a);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

}  // namespace

// quantize_q8_0 and attend come from the AVX2 table, gemm from gemm_avx512.cpp (see dot_kernels()).
const DotKernels kAvx512Dot = {dot_f32, dot_f16_f32, dot_q8_0_q8_0, dot_q4_0_q8_0, nullptr,
                                axpy,    nullptr,     nullptr,       nullptr,       nullptr};

}  // namespace slimkv
