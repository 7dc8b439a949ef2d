// Small AVX2 helpers shared by the AVX2 and AVX-512 kernel files (include only from files built with -mavx2).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace slimkv::simd {

inline float hsum(__m256 v) {  // sum of the 8 lanes
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m256i unpack_q4_0(const uint8_t* qs) {  // 16 bytes -> 32 int8 in [-8, 7]: low nibbles, then high
  __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  __m256i both = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
  return _mm256_sub_epi8(both, _mm256_set1_epi8(8));
}

}  // namespace slimkv::simd
