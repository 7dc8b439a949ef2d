// Stored KV records -> floats, vectorised (AVX2 / F16C): shared by the AVX2 attention walks and the tile kernel.
// Include only from files built with -mavx2 -mf16c.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/dot.h"
#include "kernels/kv_codec.h"

namespace slimkv::simd {

// One stored head row -> floats (head_dim % 8 == 0), vectorised: f16 via F16C, int8/int4 widened and scaled.
inline void decode_row(const uint8_t* src, int32_t hd, KvDtype dt, float* out) {
  if (dt == KvDtype::F32) {
    std::memcpy(out, src, sizeof(float) * hd);
    return;
  }
  if (dt == KvDtype::F16) {
    for (int32_t i = 0; i < hd; i += 8) {
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i))));
    }
    return;
  }
  if (dt == KvDtype::Tq4) {  // 16 codebook levels: two 8-lane permutes, chosen by the index's top bit
    const __m128i lv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tq4_levels()));
    const __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lv));
    const __m256 hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lv, 8)));
    uint16_t r16;
    std::memcpy(&r16, src, 2);
    const __m256 scale_d = _mm256_set1_ps(_cvtsh_ss(r16));
    const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    for (int32_t i = 0; i < hd; i += 8) {
      uint32_t w;
      std::memcpy(&w, src + 2 + i / 2, 4);
      const __m256i idx = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int32_t>(w)), shifts),
                                           _mm256_set1_epi32(0xF));
      const __m256 top = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28));  // bit 3 -> the sign bit: blend mask
      const __m256 v = _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, idx), _mm256_permutevar8x32_ps(hi, idx), top);
      _mm256_storeu_ps(out + i, _mm256_mul_ps(scale_d, v));
    }
    return;
  }
  if (dt == KvDtype::Tq3) return decode_kv_head(src, hd, dt, out);  // 3-bit fields straddle bytes: scalar
  uint16_t d16;
  std::memcpy(&d16, src, 2);
  const __m256 d = _mm256_set1_ps(_cvtsh_ss(d16));
  const uint8_t* q = src + 2;
  if (dt == KvDtype::Int8) {
    for (int32_t i = 0; i < hd; i += 8) {
      __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i));
      _mm256_storeu_ps(out + i, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b))));
    }
    return;
  }
  for (int32_t i = 0; i < hd; i += 8) {  // int4: 4 bytes = 8 values, low nibble first, stored +8
    uint32_t w;
    std::memcpy(&w, q + i / 2, 4);
    const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    __m256i v = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int32_t>(w)), shifts),
                                 _mm256_set1_epi32(0xF));
    v = _mm256_sub_epi32(v, _mm256_set1_epi32(8));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(d, _mm256_cvtepi32_ps(v)));
  }
}

// A key row of kv: one part, or two parts each with its own header (kv.k_split; MLA's latent | rope key).
inline void decode_key(const PagedKv& kv, const uint8_t* src, float* out) {
  if (kv.k_split == 0) return decode_row(src, kv.k_dim, kv.dtype, out);
  decode_row(src, kv.k_split, kv.dtype, out);
  decode_row(src + kv_head_record_bytes(kv.dtype, kv.k_split), kv.k_dim - kv.k_split, kv.dtype, out + kv.k_split);
}

}  // namespace slimkv::simd
