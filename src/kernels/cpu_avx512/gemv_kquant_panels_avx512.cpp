// AVX-512 VNNI decode (one token) over Q4_K / Q5_K / Q6_K / IQ4_XS panels (kernels/kquant_panels.h), bound by the
// bytes it reads (issue P2): each panel's super-block units are one contiguous stream read once, every 64-byte vector
// loaded once for both of its nibbles, the layout's offsets compile-time constants, and Q4_K's high nibbles used in
// place (x16, shifted off once per sub-block). The same integers and the same float steps per super-block as
// gemm_kquant_panels_avx512's tiles and matmul_kquant_panels_ref, so decode == the reference, bit for bit.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu_avx512/panel_tiles.h"
#include "kernels/kquant_panels.h"

namespace slimkv {
namespace {

template <DType kT>
struct Unit {  // KQuantPanels' unit layout for one type, as constants (checked against it before the walk)
  static constexpr int kPlanes = kT == DType::Q5_K ? 1 : kT == DType::Q6_K ? 2 : 0;
  static constexpr bool kMins = kT == DType::Q4_K || kT == DType::Q5_K;
  static constexpr int kSubs = kT == DType::Q6_K ? 16 : 8;
  static constexpr int64_t kHbits = KQuantPanels::kQsBytes;
  static constexpr int64_t kD = kHbits + kPlanes * 512;
  static constexpr int64_t kSc = kD + (kMins ? 64 : 32);
  static constexpr int64_t kM = kSc + kSubs * 16;
  static constexpr int64_t kBytes = (kM + (kMins ? 128 : 0) + 63) / 64 * 64;
};

inline __m512i scales16(const int8_t* sc) {  // one sub-block's 16 row scales, widened
  return _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc)));
}

// Vector v of a unit as its two code vectors: lo (the low-nibble elements), hi (those 32 further on). Q4_K's hi is
// its nibble x 16 (shifted off per sub-block by the caller); the others are the codes as the tiles unpack them.
template <DType kT>
inline void codes(const uint8_t* u, int v, __m512i& lo, __m512i& hi) {
  using L = Unit<kT>;
  const __m512i raw = _mm512_load_si512(u + 64 * v);
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  lo = _mm512_and_si512(raw, low4);
  if constexpr (kT == DType::Q4_K) {
    hi = _mm512_and_si512(raw, _mm512_set1_epi8(static_cast<char>(0xF0)));
    return;
  }
  hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
  if constexpr (kT == DType::IQ4_XS) {
    const __m512i table = _mm512_broadcast_i32x4(
        _mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, -127, -115, -103, -90, -75, -59, -39, -15));  // IQ4 + 128
    lo = _mm512_shuffle_epi8(table, lo);
    hi = _mm512_shuffle_epi8(table, hi);
  }
  if constexpr (L::kPlanes >= 1) {
    const uint8_t* hb = u + L::kHbits + 8 * (v * 2 * L::kPlanes);
    const __m512i b16 = _mm512_set1_epi8(16);
    lo = _mm512_mask_add_epi8(lo, load_mask(hb), lo, b16);
    hi = _mm512_mask_add_epi8(hi, load_mask(hb + 8 * L::kPlanes), hi, b16);
    if constexpr (L::kPlanes == 2) {
      const __m512i b32 = _mm512_set1_epi8(32);
      lo = _mm512_mask_add_epi8(lo, load_mask(hb + 8), lo, b32);
      hi = _mm512_mask_add_epi8(hi, load_mask(hb + 24), hi, b32);
    }
  }
}

// One super-block's integer sum for 16 rows: sum over sub-blocks of scale x (codes . activations + term).
template <DType kT>
inline __m512i superblock_sum(const uint8_t* u, const int8_t* xq, const int32_t* term) {
  using L = Unit<kT>;
  const auto* sc = reinterpret_cast<const int8_t*>(u + L::kSc);
  __m512i sumi = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {  // vectors 8c .. 8c + 7: elements 64c .. 64c + 63
    const int8_t* a0 = xq + 64 * c;
    const int8_t* a1 = a0 + 32;
    if constexpr (kT != DType::Q6_K) {  // sub-blocks 2c (lo) and 2c + 1 (hi) of 32
      __m512i s0 = kT == DType::IQ4_XS ? _mm512_set1_epi32(term[2 * c]) : _mm512_setzero_si512();
      __m512i s1 = kT == DType::IQ4_XS ? _mm512_set1_epi32(term[2 * c + 1]) : _mm512_setzero_si512();
      __m512i s2 = _mm512_setzero_si512(), s3 = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int g = 0; g < 8; g += 2) {
        __m512i lo0, hi0, lo1, hi1;
        codes<kT>(u, 8 * c + g, lo0, hi0);
        codes<kT>(u, 8 * c + g + 1, lo1, hi1);
        s0 = _mm512_dpbusd_epi32(s0, lo0, bcast4(a0 + 4 * g));
        s1 = _mm512_dpbusd_epi32(s1, hi0, bcast4(a1 + 4 * g));
        s2 = _mm512_dpbusd_epi32(s2, lo1, bcast4(a0 + 4 * g + 4));
        s3 = _mm512_dpbusd_epi32(s3, hi1, bcast4(a1 + 4 * g + 4));
      }
      __m512i shi = _mm512_add_epi32(s1, s3);
      if constexpr (kT == DType::Q4_K) shi = _mm512_srai_epi32(shi, 4);  // the x16 of the high nibbles, exactly
      sumi = _mm512_add_epi32(sumi, _mm512_mullo_epi32(_mm512_add_epi32(s0, s2), scales16(sc + 16 * (2 * c))));
      sumi = _mm512_add_epi32(sumi, _mm512_mullo_epi32(shi, scales16(sc + 16 * (2 * c + 1))));
    } else {  // sub-blocks of 16: lo vectors 0-3 -> 4c, 4-7 -> 4c + 1; hi -> 4c + 2, 4c + 3
      __m512i s[4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) s[j] = _mm512_set1_epi32(term[4 * c + j]);
#pragma GCC unroll 8
      for (int g = 0; g < 8; ++g) {
        __m512i lo, hi;
        codes<kT>(u, 8 * c + g, lo, hi);
        s[g / 4] = _mm512_dpbusd_epi32(s[g / 4], lo, bcast4(a0 + 4 * g));
        s[2 + g / 4] = _mm512_dpbusd_epi32(s[2 + g / 4], hi, bcast4(a1 + 4 * g));
      }
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        sumi = _mm512_add_epi32(sumi, _mm512_mullo_epi32(s[j], scales16(sc + 16 * (4 * c + j))));
      }
    }
  }
  return sumi;
}

// Panels [p0, p1), one token: y[p * 16 + i] for the rows that exist.
template <DType kT>
bool walk(const KQuantPanels& q, const Q8_KBlock* x, const int32_t* terms, float* y, int64_t rows, int64_t p0,
          int64_t p1) {
  using L = Unit<kT>;
  if (q.unit_bytes() != L::kBytes || q.sc_offset() != L::kSc || q.d_offset() != L::kD) return false;  // layout moved
  const int64_t nsb = q.nsb;
  // Software prefetch 2 units ahead along the stream: on Zen 5 without it a thread read Q4_K at 18-25 GB/s and
  // Q6_K at 10-13 (with it 34-40 / 30-37; 4 units ahead the same as 2).
  constexpr int64_t kAhead = 2 * L::kBytes;
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* u = q.base + p * nsb * L::kBytes;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t k = 0; k < nsb; ++k, u += L::kBytes) {
      for (int64_t b = 0; b < L::kBytes; b += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(u + kAhead + b), _MM_HINT_T0);
      }
      const __m512i sumi = superblock_sum<kT>(u, x[k].qs, terms + k * 16);
      const __m512 dx = _mm512_set1_ps(x[k].d);
      const auto* dh = reinterpret_cast<const __m256i*>(u + L::kD);
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_mul_ps(_mm512_cvtph_ps(_mm256_load_si256(dh)), dx), acc);
      if constexpr (L::kMins) {
        const int32_t* term = terms + k * 16;
        __m512i summ = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const __m512i mins = _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(u + L::kM) + j));
          summ = _mm512_dpwssd_epi32(summ, mins, _mm512_set1_epi32(term[j]));
        }
        const __m512 dmin = _mm512_cvtph_ps(_mm256_load_si256(dh + 1));
        acc = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(summ), _mm512_mul_ps(dmin, dx), acc);
      }
    }
    const __m512 tile[1][1] = {{acc}};
    store_tile(tile, y + p * kPanelRows, 0, rows - p * kPanelRows);
  }
  return true;
}

}  // namespace

// One token's rows [r0, r1) (whole panels); false when the panels are not this kernel's (type, alignment).
bool gemv_kquant_panels_avx512(const WeightView& w, const Q8_KBlock* x, const int32_t* terms, float* y, int64_t r0,
                               int64_t r1) {
  const KQuantPanels q = kquant_panels(w);
  if ((reinterpret_cast<uintptr_t>(q.base) & 63) != 0) return false;
  const int64_t p0 = r0 / kPanelRows, p1 = (r1 + kPanelRows - 1) / kPanelRows;
  switch (w.dtype) {
    case DType::Q4_K: return walk<DType::Q4_K>(q, x, terms, y, w.rows, p0, p1);
    case DType::Q5_K: return walk<DType::Q5_K>(q, x, terms, y, w.rows, p0, p1);
    case DType::Q6_K: return walk<DType::Q6_K>(q, x, terms, y, w.rows, p0, p1);
    case DType::IQ4_XS: return walk<DType::IQ4_XS>(q, x, terms, y, w.rows, p0, p1);
    default: return false;
  }
}

}  // namespace slimkv
