// Small AVX2 helpers shared by the AVX2 and AVX-512 kernel files (include only from files built with -mavx2).
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace slimkv::simd {

inline float hsum(__m256 v) {  // sum of the 8 lanes
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lane i = the sum of a[i]'s 8 lanes: one transpose-reduce (hadd tree) instead of 8 horizontal sums.
inline __m256 reduce8(const __m256 a[8]) {
  const __m256 s01 = _mm256_hadd_ps(a[0], a[1]), s23 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 s45 = _mm256_hadd_ps(a[4], a[5]), s67 = _mm256_hadd_ps(a[6], a[7]);
  const __m256 s0123 = _mm256_hadd_ps(s01, s23), s4567 = _mm256_hadd_ps(s45, s67);
  return _mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20), _mm256_permute2f128_ps(s0123, s4567, 0x31));
}

// Lane i = the sum of a[i]'s 8 lanes (integers: exact in any order).
inline __m256i reduce8_epi32(const __m256i a[8]) {
  const __m256i s01 = _mm256_hadd_epi32(a[0], a[1]), s23 = _mm256_hadd_epi32(a[2], a[3]);
  const __m256i s45 = _mm256_hadd_epi32(a[4], a[5]), s67 = _mm256_hadd_epi32(a[6], a[7]);
  const __m256i s0123 = _mm256_hadd_epi32(s01, s23), s4567 = _mm256_hadd_epi32(s45, s67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(s0123, s4567, 0x20), _mm256_permute2x128_si256(s0123, s4567, 0x31));
}

inline float kv_row_scale(const uint8_t* row) {  // the fp16 scale in front of an int8 / int4 KV head record
  uint16_t d16;
  std::memcpy(&d16, row, 2);
  return _cvtsh_ss(d16);
}

inline __m256i unpack_q4_0(const uint8_t* qs) {  // 16 bytes -> 32 int8 in [-8, 7]: low nibbles, then high
  __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  __m256i both = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
  return _mm256_sub_epi8(both, _mm256_set1_epi8(8));
}

}  // namespace slimkv::simd
