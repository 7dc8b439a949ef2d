// SIMD dot products and blocked matmuls of the GGML block types beyond Q8_0 / Q4_0 with their paired activations
// (Q8_0, Q8_1, Q8_K), written once for 256-bit registers and compiled twice: by cpu_avx2/quant_dot_avx2.cpp (AVX2:
// u8 x s8 products through maddubs) and cpu_avx512/quant_dot_avx512.cpp (SLIMKV_VNNI: dpbusd). Each type is a
// block kernel K (how to unpack a 32-value chunk of a weight block, its integer products with the activations, the
// block's float scales); one template tiles R weight rows x TT tokens over it, so each weight chunk is unpacked once
// per tile, and the dot product is the 1 x 1 tile: each (row, token) sees the same integer lanes and the same float
// operations whatever the tile (batched == single, bit for bit). Each equals its quant_ref reference up to float
// summation order (tests/kernels/quant_types_test.cpp).
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

// --- block kernels ----------------------------------------------------------------------------------------------
// K::W / K::X: weight / activation block types; K::kChunks 32-value chunks per block; K::Prep: per-block state of a
// weight block (unpacked scales); K::prep(w), K::chunk(w, p, c) -> 32 values, K::idot(v, y, p, c) -> 8 int32 lanes,
// K::scale(w, x) -> the block's float factor, K::kMin: whether K::min_term(w, p, x) is subtracted (added for Q4_1/Q5_1
// via a negative sign inside).

// Defaults of a block kernel: no per-block state, no min term, fp16 scales multiplied (32-value types).
template <class W_, class X_>
struct BlockKernel {
  using W = W_;
  using X = X_;
  static constexpr int kChunks = 1, kBlock = 32;
  static constexpr bool kMin = false;
  struct Prep {};
  static Prep prep(const W&) { return {}; }
  static float scale(const W& w, const X& x) { return h2f(w.d) * h2f(x.d); }
  static float min_term(const W&, const Prep&, const X&) { return 0; }
};

struct KQ4_1 : BlockKernel<slimkv::Q4_1Block, slimkv::Q8_1Block> {
  static constexpr bool kMin = true;
  static __m256i chunk(const W& w, const Prep&, int) { return nibbles(w.qs); }
  static __m256i idot(__m256i v, __m256i y, const Prep&, int) { return dot_u8(v, y); }
  static float min_term(const W& w, const Prep&, const X& x) { return -(h2f(w.m) * h2f(x.s)); }
};

struct KQ5_1 : BlockKernel<slimkv::Q5_1Block, slimkv::Q8_1Block> {
  static constexpr bool kMin = true;
  static __m256i chunk(const W& w, const Prep&, int) { return _mm256_or_si256(nibbles(w.qs), fifth_bits(w.qh)); }
  static __m256i idot(__m256i v, __m256i y, const Prep&, int) { return dot_u8(v, y); }
  static float min_term(const W& w, const Prep&, const X& x) { return -(h2f(w.m) * h2f(x.s)); }
};

struct KQ5_0 : BlockKernel<slimkv::Q5_0Block, slimkv::Q8_0Block> {
  static __m256i chunk(const W& w, const Prep&, int) {
    return _mm256_sub_epi8(_mm256_or_si256(nibbles(w.qs), fifth_bits(w.qh)), _mm256_set1_epi8(16));
  }
  static __m256i idot(__m256i v, __m256i y, const Prep&, int) { return dot_s8(v, y); }
};

inline __m256i lut256(const int8_t* table) {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(table));
  return _mm256_set_m128i(t, t);
}

struct KIQ4_NL : BlockKernel<slimkv::IQ4_NLBlock, slimkv::Q8_0Block> {
  static __m256i chunk(const W& w, const Prep&, int) {
    return _mm256_shuffle_epi8(lut256(slimkv::kIq4nlValues), nibbles(w.qs));
  }
  static __m256i idot(__m256i v, __m256i y, const Prep&, int) { return dot_s8(v, y); }
};

struct KMXFP4 : BlockKernel<slimkv::MXFP4Block, slimkv::Q8_0Block> {
  static __m256i chunk(const W& w, const Prep&, int) {
    return _mm256_shuffle_epi8(lut256(slimkv::kMxfp4Values), nibbles(w.qs));
  }
  static __m256i idot(__m256i v, __m256i y, const Prep&, int) { return dot_s8(v, y); }
  static float scale(const W& w, const X& x) { return slimkv::e8m0_half(w.e) * h2f(x.d); }
};

// Defaults of a super-block kernel: 8 chunks of 32 values, Q8_K activations, scale x.d * d.
template <class W_>
struct SuperBlockKernel : BlockKernel<W_, slimkv::Q8_KBlock> {
  static constexpr int kChunks = 8, kBlock = 256;
  static float scale(const W_& w, const slimkv::Q8_KBlock& x) { return x.d * h2f(w.d); }
};

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

template <bool kFive>
struct KQ45_K {
  using W = std::conditional_t<kFive, slimkv::Q5_KBlock, slimkv::Q4_KBlock>;
  using X = slimkv::Q8_KBlock;
  static constexpr int kChunks = 8, kBlock = 256;
  static constexpr bool kMin = true;
  struct Prep {
    uint8_t sm[16];
  };
  static Prep prep(const W& w) {
    Prep p;
    k4_unpack(w.scales, p.sm);
    return p;
  }
  static __m256i chunk(const W& w, const Prep&, int c) {
    const __m256i q = load32(w.qs + 32 * (c / 2));
    __m256i v = _mm256_and_si256(c % 2 ? _mm256_srli_epi16(q, 4) : q, _mm256_set1_epi8(0x0F));
    if constexpr (kFive) {
      const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(load32(w.qh), c), _mm256_set1_epi8(1));
      v = _mm256_or_si256(v, _mm256_slli_epi16(hb, 4));
    }
    return v;
  }
  static __m256i idot(__m256i v, __m256i y, const Prep& p, int c) { return dot_u8_scaled(v, y, p.sm[c]); }
  static float scale(const W& w, const X& x) { return x.d * h2f(w.d); }
  static float min_term(const W& w, const Prep& p, const X& x) {
    return x.d * h2f(w.dmin) * static_cast<float>(mins_dot(p.sm + 8, x.bsums));
  }
};

struct KQ6_K : SuperBlockKernel<slimkv::Q6_KBlock> {
  struct Prep {
    const int8_t* sc;
  };
  static Prep prep(const W& w) { return {w.scales}; }
  static __m256i chunk(const W& w, const Prep&, int c) {
    const int h = c / 4, k = c % 4;
    const __m256i ql = load32(w.ql + 64 * h + 32 * (k & 1));
    const __m256i lo = _mm256_and_si256(k < 2 ? ql : _mm256_srli_epi16(ql, 4), _mm256_set1_epi8(0x0F));
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(load32(w.qh + 32 * h), 2 * k), _mm256_set1_epi8(0x03));
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));  // value + 32, in [0, 63]
  }
  static __m256i idot(__m256i v, __m256i y, const Prep& p, int c) {
    const __m256i d = _mm256_sub_epi16(_mm256_maddubs_epi16(v, y), _mm256_maddubs_epi16(_mm256_set1_epi8(32), y));
    return _mm256_madd_epi16(d, _mm256_set_m128i(_mm_set1_epi16(p.sc[2 * c + 1]), _mm_set1_epi16(p.sc[2 * c])));
  }
};

struct KQ3_K : SuperBlockKernel<slimkv::Q3_KBlock> {
  struct Prep {
    int16_t sc[16];  // signed scales (stored - 32)
  };
  static Prep prep(const W& w) {
    int8_t raw[16];
    slimkv::quant_ref::q3_k_scales(w.scales, raw);
    Prep p;
    const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(raw)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p.sc), _mm256_sub_epi16(sc, _mm256_set1_epi16(32)));
    return p;
  }
  static __m256i chunk(const W& w, const Prep&, int c) {
    const int h = c / 4, k = c % 4;
    const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(load32(w.qs + 32 * h), 2 * k), _mm256_set1_epi8(0x03));
    const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(load32(w.hmask), c), _mm256_set1_epi8(1));
    return _mm256_or_si256(lo, _mm256_slli_epi16(hb, 2));  // value + 4, in [0, 7]
  }
  static __m256i idot(__m256i v, __m256i y, const Prep& p, int c) {
    const __m256i d = _mm256_sub_epi16(_mm256_maddubs_epi16(v, y), _mm256_maddubs_epi16(_mm256_set1_epi8(4), y));
    return _mm256_madd_epi16(d, _mm256_set_m128i(_mm_set1_epi16(p.sc[2 * c + 1]), _mm_set1_epi16(p.sc[2 * c])));
  }
};

struct KQ2_K : SuperBlockKernel<slimkv::Q2_KBlock> {
  static constexpr bool kMin = true;
  struct Prep {
    const uint8_t* sc;
  };
  static Prep prep(const W& w) { return {w.scales}; }
  static __m256i chunk(const W& w, const Prep&, int c) {
    return _mm256_and_si256(_mm256_srli_epi16(load32(w.qs + 32 * (c / 4)), 2 * (c % 4)), _mm256_set1_epi8(0x03));
  }
  static __m256i idot(__m256i v, __m256i y, const Prep& p, int c) {
    return dot_u8_scaled(v, y, p.sc[2 * c] & 0xF, p.sc[2 * c + 1] & 0xF);
  }
  static float min_term(const W& w, const Prep&, const X& x) {
    const __m128i scm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales));
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(scm, 4), _mm_set1_epi8(0x0F)));
    return x.d * h2f(w.dmin) * static_cast<float>(hsum_i32(_mm256_madd_epi16(mins, load32(x.bsums))));
  }
};

// IQ4_XS's 8 six-bit sub-block scales (stored + 32) as bytes 0..7, from scales_l's nibbles and scales_h's 2-bit
// fields spread with shifts and masks (no per-scale loop).
inline uint64_t iq4xs_scale_bytes(const slimkv::IQ4_XSBlock& w) {
  uint32_t sl;
  std::memcpy(&sl, w.scales_l, 4);
  uint64_t lo = sl;
  lo = (lo | (lo << 16)) & 0x0000FFFF0000FFFFull;
  lo = (lo | (lo << 8)) & 0x00FF00FF00FF00FFull;
  lo = (lo | (lo << 4)) & 0x0F0F0F0F0F0F0F0Full;
  uint64_t hi = w.scales_h;
  hi = (hi | (hi << 24)) & 0x000000FF000000FFull;
  hi = (hi | (hi << 12)) & 0x000F000F000F000Full;
  hi = (hi | (hi << 6)) & 0x0303030303030303ull;
  return lo | (hi << 4);
}

struct KIQ4_XS : SuperBlockKernel<slimkv::IQ4_XSBlock> {
  struct Prep {
    int16_t ls[8];  // signed sub-block scales
  };
  static Prep prep(const W& w) {
    Prep p;
    const uint64_t b = iq4xs_scale_bytes(w);
    for (int ib = 0; ib < 8; ++ib) p.ls[ib] = static_cast<int16_t>(static_cast<int>((b >> (8 * ib)) & 0xFF) - 32);
    return p;
  }
  static __m256i chunk(const W& w, const Prep&, int c) {
    return _mm256_shuffle_epi8(lut256(slimkv::kIq4nlValues), nibbles(w.qs + 16 * c));
  }
  static __m256i idot(__m256i v, __m256i y, const Prep& p, int c) {
    const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(y, v));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(p.ls[c]));
  }
};

// --- the tile ---------------------------------------------------------------------------------------------------

// y[t * ldy + r] for an R x TT tile: rows w + r * nb (nb blocks each), tokens x + t * nb.
template <class K, int R, int TT>
__attribute__((always_inline)) inline void tile(const typename K::W* w, int64_t nb, const typename K::X* x, float* y, int64_t ldy) {
  __m256 acc[R][TT];
  float accm[R][TT];
  _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
    _Pragma("GCC unroll 8") for (int t = 0; t < TT; ++t) {
      acc[r][t] = _mm256_setzero_ps();
      accm[r][t] = 0;
    }
  }
  for (int64_t i = 0; i < nb; ++i) {
    typename K::Prep p[R];
    _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) p[r] = K::prep(w[r * nb + i]);
    __m256i sumi[R][TT];
    _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
      _Pragma("GCC unroll 8") for (int t = 0; t < TT; ++t) sumi[r][t] = _mm256_setzero_si256();
    }
#pragma GCC unroll 8
    for (int c = 0; c < K::kChunks; ++c) {
      __m256i xv[TT];
      _Pragma("GCC unroll 8") for (int t = 0; t < TT; ++t) xv[t] = load32(x[t * nb + i].qs + 32 * c);
      _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
        const __m256i v = K::chunk(w[r * nb + i], p[r], c);
        _Pragma("GCC unroll 8") for (int t = 0; t < TT; ++t) sumi[r][t] = _mm256_add_epi32(sumi[r][t], K::idot(v, xv[t], p[r], c));
      }
    }
    _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
      _Pragma("GCC unroll 8") for (int t = 0; t < TT; ++t) {
        const typename K::W& wb = w[r * nb + i];
        const typename K::X& xb = x[t * nb + i];
        acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(K::scale(wb, xb)), _mm256_cvtepi32_ps(sumi[r][t]), acc[r][t]);
        if constexpr (K::kMin) accm[r][t] += K::min_term(wb, p[r], xb);
      }
    }
  }
  _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
    _Pragma("GCC unroll 8") for (int t = 0; t < TT; ++t) y[t * ldy + r] = slimkv::simd::hsum(acc[r][t]) - accm[r][t];
  }
}

template <class K>
float dot(const void* w, const void* x, int64_t n) {
  float y;
  tile<K, 1, 1>(static_cast<const typename K::W*>(w), n / K::kBlock, static_cast<const typename K::X*>(x), &y, 1);
  return y;
}

#ifdef SLIMKV_VNNI
constexpr int kTileRows = 1, kTileTokens = 8;  // 32 vector registers: 2 x 4 integer and float accumulators
#else
constexpr int kTileRows = 1, kTileTokens = 4;  // 16 registers
#endif
constexpr int kDecodeRows = 4;  // decode rows in flight (1 vs 4 measured inside the noise for these kernels)

template <class K>
void gemm(const void* vw, int64_t rows, int64_t cols, const void* vx, int64_t T, float* y, int64_t ldy) {
  const auto* w = static_cast<const typename K::W*>(vw);
  const auto* x = static_cast<const typename K::X*>(vx);
  const int64_t nb = cols / K::kBlock;
  int64_t r = 0;
  if (T == 1) {  // decode: independent rows in flight
    for (; r + kDecodeRows <= rows; r += kDecodeRows) tile<K, kDecodeRows, 1>(w + r * nb, nb, x, y + r, ldy);
    for (; r < rows; ++r) tile<K, 1, 1>(w + r * nb, nb, x, y + r, ldy);
    return;
  }
  for (; r + kTileRows <= rows; r += kTileRows) {
    int64_t t = 0;
    for (; t + kTileTokens <= T; t += kTileTokens) tile<K, kTileRows, kTileTokens>(w + r * nb, nb, x + t * nb, y + t * ldy + r, ldy);
    for (; t < T; ++t) tile<K, kTileRows, 1>(w + r * nb, nb, x + t * nb, y + t * ldy + r, ldy);
  }
  for (; r < rows; ++r) {
    int64_t t = 0;
    for (; t + kTileTokens <= T; t += kTileTokens) tile<K, 1, kTileTokens>(w + r * nb, nb, x + t * nb, y + t * ldy + r, ldy);
    for (; t < T; ++t) tile<K, 1, 1>(w + r * nb, nb, x + t * nb, y + t * ldy + r, ldy);
  }
}

// One row per DType (nulls: this ISA has nothing faster than the reference or the DotKernels table).
inline const slimkv::IsaTypeKernels* make_rows() {
  using slimkv::DType;
  static slimkv::IsaTypeKernels rows[slimkv::kNumDTypes] = {};
  auto set = [](DType t, slimkv::VecDotFn d, slimkv::GemmFn g) { rows[static_cast<int>(t)] = {d, g}; };
  set(DType::Q4_1, dot<KQ4_1>, gemm<KQ4_1>);
  set(DType::Q5_0, dot<KQ5_0>, gemm<KQ5_0>);
  set(DType::Q5_1, dot<KQ5_1>, gemm<KQ5_1>);
  set(DType::IQ4_NL, dot<KIQ4_NL>, gemm<KIQ4_NL>);
  set(DType::MXFP4, dot<KMXFP4>, gemm<KMXFP4>);
  set(DType::Q2_K, dot<KQ2_K>, gemm<KQ2_K>);
  set(DType::Q3_K, dot<KQ3_K>, gemm<KQ3_K>);
  set(DType::Q4_K, dot<KQ45_K<false>>, gemm<KQ45_K<false>>);
  set(DType::Q5_K, dot<KQ45_K<true>>, gemm<KQ45_K<true>>);
  set(DType::Q6_K, dot<KQ6_K>, gemm<KQ6_K>);
  set(DType::IQ4_XS, dot<KIQ4_XS>, gemm<KIQ4_XS>);
  return rows;
}
