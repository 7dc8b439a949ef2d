// SIMD dot products of the GGML block types beyond Q8_0 / Q4_0 with their paired activations (Q8_0, Q8_1, Q8_K),
// written once for 256-bit registers and compiled twice: by cpu_avx2/quant_dot_avx2.cpp (AVX2: u8 x s8 products
// through maddubs) and cpu_avx512/quant_dot_avx512.cpp (SLIMKV_VNNI: dpbusd, no 16-bit intermediate). Each kernel
// equals its quant_ref reference up to float summation order (tests/kernels/quant_types_test.cpp).
// Include only inside an anonymous namespace of a file built with -mavx2 -mfma -mf16c.
#include <immintrin.h>

#include <cstring>

#include "core/quant_blocks.h"
#include "kernels/cpu_avx2/simd_avx2.h"
#include "kernels/quant_ref.h"

// --- helpers ------------------------------------------------------------------------------------------------

inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// Sum of products of 32 signed int8 pairs as 8 int32 lanes (|x| * sign(y, x): no saturation for |x| <= 127).
inline __m256i dot_s8(__m256i x, __m256i y) {
  const __m256i ax = _mm256_sign_epi8(x, x), sy = _mm256_sign_epi8(y, x);
#ifdef SLIMKV_VNNI
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), ax, sy);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), _mm256_set1_epi16(1));
#endif
}

// Unsigned (u <= 127) x signed products as 8 int32 lanes.
inline __m256i dot_u8(__m256i u, __m256i y) {
#ifdef SLIMKV_VNNI
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, y);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), _mm256_set1_epi16(1));
#endif
}

// 16 pair sums of u x y (u <= 63: no saturation), weighted by 16-bit scales: the first 8 lanes (values 0..15) by
// s_lo, the last 8 (values 16..31) by s_hi; 8 int32 lanes.
inline __m256i dot_u8_scaled(__m256i u, __m256i y, int16_t s_lo, int16_t s_hi) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), _mm256_set_m128i(_mm_set1_epi16(s_hi), _mm_set1_epi16(s_lo)));
}
inline __m256i dot_u8_scaled(__m256i u, __m256i y, int16_t s) { return dot_u8_scaled(u, y, s, s); }

// 16 packed bytes -> 32 values: low nibbles (values 0..15) then high nibbles (16..31).
inline __m256i nibbles(const uint8_t* qs) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
}

// 32 bits -> 32 bytes, 0x10 where the bit is set (Q5_0 / Q5_1's fifth bit).
inline __m256i fifth_bits(const uint8_t* qh) {
  uint32_t x32;
  std::memcpy(&x32, qh, 4);
  const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
  __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(x32)), shuf);
  bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
  return _mm256_and_si256(_mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1)), _mm256_set1_epi8(0x10));
}

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// --- 32-value blocks ------------------------------------------------------------------------------------------

float dot_q4_1(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const slimkv::Q4_1Block*>(vw);
  const auto* x = static_cast<const slimkv::Q8_1Block*>(vx);
  __m256 acc = _mm256_setzero_ps();
  float acc_m = 0;
  for (int64_t i = 0; i < n / 32; ++i) {
    const __m256i p = dot_u8(nibbles(w[i].qs), load32(x[i].qs));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(w[i].d) * h2f(x[i].d)), _mm256_cvtepi32_ps(p), acc);
    acc_m += h2f(w[i].m) * h2f(x[i].s);
  }
  return slimkv::simd::hsum(acc) + acc_m;
}

float dot_q5_0(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const slimkv::Q5_0Block*>(vw);
  const auto* x = static_cast<const slimkv::Q8_0Block*>(vx);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 32; ++i) {
    const __m256i v = _mm256_sub_epi8(_mm256_or_si256(nibbles(w[i].qs), fifth_bits(w[i].qh)), _mm256_set1_epi8(16));
    const __m256i p = dot_s8(v, load32(x[i].qs));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(w[i].d) * h2f(x[i].d)), _mm256_cvtepi32_ps(p), acc);
  }
  return slimkv::simd::hsum(acc);
}

float dot_q5_1(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const slimkv::Q5_1Block*>(vw);
  const auto* x = static_cast<const slimkv::Q8_1Block*>(vx);
  __m256 acc = _mm256_setzero_ps();
  float acc_m = 0;
  for (int64_t i = 0; i < n / 32; ++i) {
    const __m256i u = _mm256_or_si256(nibbles(w[i].qs), fifth_bits(w[i].qh));
    const __m256i p = dot_u8(u, load32(x[i].qs));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(w[i].d) * h2f(x[i].d)), _mm256_cvtepi32_ps(p), acc);
    acc_m += h2f(w[i].m) * h2f(x[i].s);
  }
  return slimkv::simd::hsum(acc) + acc_m;
}

inline __m256i lut256(const int8_t* table) {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(table));
  return _mm256_set_m128i(t, t);
}

float dot_iq4_nl(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const slimkv::IQ4_NLBlock*>(vw);
  const auto* x = static_cast<const slimkv::Q8_0Block*>(vx);
  const __m256i lut = lut256(slimkv::kIq4nlValues);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 32; ++i) {
    const __m256i p = dot_s8(_mm256_shuffle_epi8(lut, nibbles(w[i].qs)), load32(x[i].qs));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(w[i].d) * h2f(x[i].d)), _mm256_cvtepi32_ps(p), acc);
  }
  return slimkv::simd::hsum(acc);
}

float dot_mxfp4(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const slimkv::MXFP4Block*>(vw);
  const auto* x = static_cast<const slimkv::Q8_0Block*>(vx);
  const __m256i lut = lut256(slimkv::kMxfp4Values);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 32; ++i) {
    const __m256i p = dot_s8(_mm256_shuffle_epi8(lut, nibbles(w[i].qs)), load32(x[i].qs));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(slimkv::e8m0_half(w[i].e) * h2f(x[i].d)), _mm256_cvtepi32_ps(p), acc);
  }
  return slimkv::simd::hsum(acc);
}

// --- 256-value super-blocks -----------------------------------------------------------------------------------

// Q4_K / Q5_K's 12 scale bytes -> 8 scales (bytes 0..7) and 8 mins (bytes 8..15).
inline void k4_unpack(const uint8_t* packed, uint8_t out[16]) {
  constexpr uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f, kmask3 = 0x03030303;
  uint32_t u[4];
  std::memcpy(u, packed, 12);
  u[3] = ((u[2] >> 4) & kmask2) | (((u[1] >> 6) & kmask3) << 4);
  const uint32_t aux = u[1] & kmask1;
  u[1] = (u[2] & kmask2) | (((u[0] >> 6) & kmask3) << 4);
  u[2] = aux;
  u[0] &= kmask1;
  std::memcpy(out, u, 16);
}

// sum_k mins[k] * (bsums[2k] + bsums[2k+1]) for 8 mins.
inline int32_t mins_dot(const uint8_t* mins8, const int16_t* bsums) {
  const __m128i b0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bsums));
  const __m128i b1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bsums + 8));
  const __m128i pairs = _mm_hadd_epi16(b0, b1);
  const __m128i m = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(mins8)));
  __m128i p = _mm_madd_epi16(m, pairs);
  p = _mm_add_epi32(p, _mm_shuffle_epi32(p, 0x4E));
  p = _mm_add_epi32(p, _mm_shuffle_epi32(p, 0xB1));
  return _mm_cvtsi128_si32(p);
}

template <bool kFive, typename B>
float dot_k45(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const B*>(vw);
  const auto* x = static_cast<const slimkv::Q8_KBlock*>(vx);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  __m256 acc = _mm256_setzero_ps();
  float acc_m = 0;
  for (int64_t i = 0; i < n / 256; ++i) {
    uint8_t sm[16];
    k4_unpack(w[i].scales, sm);
    acc_m += x[i].d * h2f(w[i].dmin) * static_cast<float>(mins_dot(sm + 8, x[i].bsums));
    __m256i hb;
    if constexpr (kFive) hb = load32(w[i].qh);
    __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m256i q = load32(w[i].qs + 32 * j);
      __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
      if constexpr (kFive) {
        const __m256i one = _mm256_set1_epi8(1);
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * j), one), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * j + 1), one), 4));
      }
      sumi = _mm256_add_epi32(sumi, dot_u8_scaled(lo, load32(x[i].qs + 64 * j), sm[2 * j]));
      sumi = _mm256_add_epi32(sumi, dot_u8_scaled(hi, load32(x[i].qs + 64 * j + 32), sm[2 * j + 1]));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(x[i].d * h2f(w[i].d)), _mm256_cvtepi32_ps(sumi), acc);
  }
  return slimkv::simd::hsum(acc) - acc_m;
}

float dot_q4_k(const void* w, const void* x, int64_t n) { return dot_k45<false, slimkv::Q4_KBlock>(w, x, n); }
float dot_q5_k(const void* w, const void* x, int64_t n) { return dot_k45<true, slimkv::Q5_KBlock>(w, x, n); }

float dot_q6_k(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const slimkv::Q6_KBlock*>(vw);
  const auto* x = static_cast<const slimkv::Q8_KBlock*>(vx);
  const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(0x03), m32 = _mm256_set1_epi8(32);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 256; ++i) {
    const int8_t* sc = w[i].scales;
    __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load32(w[i].ql + 64 * h), ql1 = load32(w[i].ql + 64 * h + 32);
      const __m256i qh = load32(w[i].qh + 32 * h);
      __m256i q[4];
      q[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m3), 4));
      q[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m3), 4));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m3), 4));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m3), 4));
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m256i y = load32(x[i].qs + 128 * h + 32 * k);
        const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(q[k], y), _mm256_maddubs_epi16(m32, y));
        const int s = 8 * h + 2 * k;
        sumi = _mm256_add_epi32(
            sumi, _mm256_madd_epi16(p, _mm256_set_m128i(_mm_set1_epi16(sc[s + 1]), _mm_set1_epi16(sc[s]))));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(x[i].d * h2f(w[i].d)), _mm256_cvtepi32_ps(sumi), acc);
  }
  return slimkv::simd::hsum(acc);
}

float dot_q3_k(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const slimkv::Q3_KBlock*>(vw);
  const auto* x = static_cast<const slimkv::Q8_KBlock*>(vx);
  const __m256i m3 = _mm256_set1_epi8(0x03), one = _mm256_set1_epi8(1), m4 = _mm256_set1_epi8(4);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 256; ++i) {
    int8_t sc[16];
    slimkv::quant_ref::q3_k_scales(w[i].scales, sc);
    const __m256i hm = load32(w[i].hmask);
    __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i qv = load32(w[i].qs + 32 * h);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(qv, 2 * k), m3);
        const __m256i hb = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + k), one), 2);
        const __m256i u = _mm256_or_si256(lo, hb);  // value + 4, in [0, 7]
        const __m256i y = load32(x[i].qs + 128 * h + 32 * k);
        const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(u, y), _mm256_maddubs_epi16(m4, y));
        const int s = 8 * h + 2 * k;
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, _mm256_set_m128i(_mm_set1_epi16(sc[s + 1] - 32),
                                                                             _mm_set1_epi16(sc[s] - 32))));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(x[i].d * h2f(w[i].d)), _mm256_cvtepi32_ps(sumi), acc);
  }
  return slimkv::simd::hsum(acc);
}

float dot_q2_k(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const slimkv::Q2_KBlock*>(vw);
  const auto* x = static_cast<const slimkv::Q8_KBlock*>(vx);
  const __m256i m3 = _mm256_set1_epi8(0x03);
  __m256 acc = _mm256_setzero_ps();
  float acc_m = 0;
  for (int64_t i = 0; i < n / 256; ++i) {
    const __m128i scm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i].scales));
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(scm, 4), _mm_set1_epi8(0x0F)));
    const int32_t summ = hsum_i32(_mm256_madd_epi16(mins, load32(x[i].bsums)));
    acc_m += x[i].d * h2f(w[i].dmin) * static_cast<float>(summ);
    __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i qv = load32(w[i].qs + 32 * h);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m256i u = _mm256_and_si256(_mm256_srli_epi16(qv, 2 * k), m3);
        const int s = 8 * h + 2 * k;
        sumi = _mm256_add_epi32(sumi, dot_u8_scaled(u, load32(x[i].qs + 128 * h + 32 * k), w[i].scales[s] & 0xF,
                                                    w[i].scales[s + 1] & 0xF));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(x[i].d * h2f(w[i].d)), _mm256_cvtepi32_ps(sumi), acc);
  }
  return slimkv::simd::hsum(acc) - acc_m;
}

float dot_iq4_xs(const void* vw, const void* vx, int64_t n) {
  const auto* w = static_cast<const slimkv::IQ4_XSBlock*>(vw);
  const auto* x = static_cast<const slimkv::Q8_KBlock*>(vx);
  const __m256i lut = lut256(slimkv::kIq4nlValues);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 256; ++i) {
    __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = ((w[i].scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((w[i].scales_h >> 2 * ib) & 3) << 4);
      const __m256i v = _mm256_shuffle_epi8(lut, nibbles(w[i].qs + 16 * ib));
      const __m256i y = load32(x[i].qs + 32 * ib);
      const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(y, v));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p16, _mm256_set1_epi16(static_cast<int16_t>(ls - 32))));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(x[i].d * h2f(w[i].d)), _mm256_cvtepi32_ps(sumi), acc);
  }
  return slimkv::simd::hsum(acc);
}

// One row per DType (nulls: this ISA has nothing faster than the reference or the DotKernels table).
inline const slimkv::IsaTypeKernels* make_rows() {
  using slimkv::DType;
  static slimkv::IsaTypeKernels rows[slimkv::kNumDTypes] = {};
  auto set = [](DType t, slimkv::VecDotFn f) { rows[static_cast<int>(t)].dot = f; };
  set(DType::Q4_1, dot_q4_1);
  set(DType::Q5_0, dot_q5_0);
  set(DType::Q5_1, dot_q5_1);
  set(DType::IQ4_NL, dot_iq4_nl);
  set(DType::MXFP4, dot_mxfp4);
  set(DType::Q2_K, dot_q2_k);
  set(DType::Q3_K, dot_q3_k);
  set(DType::Q4_K, dot_q4_k);
  set(DType::Q5_K, dot_q5_k);
  set(DType::Q6_K, dot_q6_k);
  set(DType::IQ4_XS, dot_iq4_xs);
  return rows;
}
