// AVX-512 VNNI matmul over Q4_K / Q5_K / Q6_K / IQ4_XS panels (kernels/kquant_panels.h): per sub-block, 16 rows'
// unsigned codes times the token's Q8_K activations, 4 at a time (one vpdpbusd serves 16 rows), starting from the
// token's offset term (Q6_K, IQ4_XS); then one multiply by the 16 rows' sub-block scales. Per super-block the
// integer sum is scaled once (and the mins, vpdpwssd of the min pairs and the activation pair sums, taken off).
// Tiles: P panels x TT tokens; every (row, token) sums its integers exactly and its super-blocks in order whatever
// P and TT — batched == single, bit for bit. Reference: matmul_kquant_panels_ref (tests/kernels compares them).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu_avx512/panel_tiles.h"
#include "kernels/kquant_panels.h"

namespace slimkv {
namespace {

template <DType kT>
struct Codes {  // unpacks the 8 vectors of one (chunk, half) of a unit into unsigned codes
  static constexpr int kPlanes = kT == DType::Q5_K ? 1 : kT == DType::Q6_K ? 2 : 0;
  static void unpack(const KQuantPanels& q, const uint8_t* u, int c, int h, __m512i* out) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    [[maybe_unused]] const __m512i table = _mm512_broadcast_i32x4(
        _mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, -127, -115, -103, -90, -75, -59, -39, -15));  // IQ4 + 128
    const uint8_t* hb = u + q.hbits_offset();
#pragma GCC unroll 8
    for (int g = 0; g < 8; ++g) {
      const int v = 8 * c + g;
      const __m512i raw = _mm512_load_si512(u + 64 * v);
      __m512i code = _mm512_and_si512(h ? _mm512_srli_epi16(raw, 4) : raw, low4);
      if constexpr (kPlanes >= 1) {
        code = _mm512_mask_add_epi8(code, load_mask(hb + 8 * ((v * 2 + h) * kPlanes)), code, _mm512_set1_epi8(16));
      }
      if constexpr (kPlanes == 2) {
        code = _mm512_mask_add_epi8(code, load_mask(hb + 8 * ((v * 2 + h) * kPlanes + 1)), code, _mm512_set1_epi8(32));
      }
      if constexpr (kT == DType::IQ4_XS) code = _mm512_shuffle_epi8(table, code);
      out[g] = code;
    }
  }
};

// Rows of P panels (from p0) for TT tokens. x: [T, nsb] Q8_K blocks, terms: [T, nsb, 16] (kquant_panel_terms).
template <DType kT, int P, int TT>
void tile(const KQuantPanels& q, int64_t p0, const Q8_KBlock* x, const int32_t* terms, float* y, int64_t ldy,
          int64_t rows_left) {
  constexpr bool kMins = kT == DType::Q4_K || kT == DType::Q5_K;
  constexpr bool kSub16 = kT == DType::Q6_K;
  const int64_t nsb = q.nsb;
  __m512 acc[P][TT];
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 8
    for (int t = 0; t < TT; ++t) acc[p][t] = _mm512_setzero_ps();
  for (int64_t k = 0; k < nsb; ++k) {
    __m512i sumi[P][TT];
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p)
#pragma GCC unroll 8
      for (int t = 0; t < TT; ++t) sumi[p][t] = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
      for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 8
        for (int p = 0; p < P; ++p) {
          const uint8_t* u = q.unit(p0 + p, k);
          const auto* sc = reinterpret_cast<const int8_t*>(u + q.sc_offset());
          __m512i w[8];
          Codes<kT>::unpack(q, u, c, h, w);
          if constexpr (!kSub16) {
            const int s = 2 * c + h;
            const __m512i scale = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16 * s)));
#pragma GCC unroll 8
            for (int t = 0; t < TT; ++t) {
              const int8_t* a = x[t * nsb + k].qs + 64 * c + 32 * h;
              __m512i s0 = kMins ? _mm512_setzero_si512() : _mm512_set1_epi32(terms[(t * nsb + k) * 16 + s]);
              __m512i s1 = _mm512_setzero_si512();
#pragma GCC unroll 8
              for (int g = 0; g < 8; g += 2) {
                s0 = _mm512_dpbusd_epi32(s0, w[g], bcast4(a + 4 * g));
                s1 = _mm512_dpbusd_epi32(s1, w[g + 1], bcast4(a + 4 * g + 4));
              }
              sumi[p][t] = _mm512_add_epi32(sumi[p][t], _mm512_mullo_epi32(_mm512_add_epi32(s0, s1), scale));
            }
          } else {  // two sub-blocks of 16: vectors 0-3 and 4-7
            const int s = 4 * c + 2 * h;
            const __m512i sa = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16 * s)));
            const __m512i sb = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16 * s + 16)));
#pragma GCC unroll 8
            for (int t = 0; t < TT; ++t) {
              const int8_t* a = x[t * nsb + k].qs + 64 * c + 32 * h;
              const int32_t* term = terms + (t * nsb + k) * 16 + s;
              __m512i s0 = _mm512_set1_epi32(term[0]), s1 = _mm512_set1_epi32(term[1]);
#pragma GCC unroll 8
              for (int g = 0; g < 4; ++g) {
                s0 = _mm512_dpbusd_epi32(s0, w[g], bcast4(a + 4 * g));
                s1 = _mm512_dpbusd_epi32(s1, w[g + 4], bcast4(a + 4 * g + 16));
              }
              sumi[p][t] = _mm512_add_epi32(sumi[p][t], _mm512_add_epi32(_mm512_mullo_epi32(s0, sa),
                                                                         _mm512_mullo_epi32(s1, sb)));
            }
          }
        }
      }
    }
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) {
      const uint8_t* u = q.unit(p0 + p, k);
      const auto* dh = reinterpret_cast<const __m256i*>(u + q.d_offset());
      const __m512 d = _mm512_cvtph_ps(_mm256_load_si256(dh));
      [[maybe_unused]] __m512 dmin;
      [[maybe_unused]] __m512i mins[4];
      if constexpr (kMins) {
        dmin = _mm512_cvtph_ps(_mm256_load_si256(dh + 1));
        for (int j = 0; j < 4; ++j) {
          mins[j] = _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(u + q.m_offset()) + j));
        }
      }
#pragma GCC unroll 8
      for (int t = 0; t < TT; ++t) {
        const __m512 dx = _mm512_set1_ps(x[t * nsb + k].d);
        acc[p][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi[p][t]), _mm512_mul_ps(d, dx), acc[p][t]);
        if constexpr (kMins) {
          const int32_t* term = terms + (t * nsb + k) * 16;
          __m512i summ = _mm512_setzero_si512();
#pragma GCC unroll 8
          for (int j = 0; j < 4; ++j) summ = _mm512_dpwssd_epi32(summ, mins[j], _mm512_set1_epi32(term[j]));
          acc[p][t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(summ), _mm512_mul_ps(dmin, dx), acc[p][t]);
        }
      }
    }
  }
  store_tile(acc, y, ldy, rows_left);
}

template <DType kT, int P, int TT>
void run(const KQuantPanels& q, const Q8_KBlock* x, const int32_t* terms, int64_t T, float* y, int64_t ldy,
         int64_t p0, int64_t p1, int64_t rows) {
  const int64_t nsb = q.nsb;
  walk_tiles<P, TT>(T, p0, p1, [&](auto panels, auto tokens, int64_t p, int64_t t) {
    tile<kT, decltype(panels)::value, decltype(tokens)::value>(q, p, x + t * nsb, terms + t * nsb * 16,
                                                               y + t * ldy + p * kPanelRows, ldy, rows - p * kPanelRows);
  });
}

}  // namespace

bool gemv_kquant_panels_avx512(const WeightView& w, const Q8_KBlock* x, const int32_t* terms, float* y, int64_t r0,
                               int64_t r1);  // gemv_kquant_panels_avx512.cpp: one token, bound by bytes

bool gemm_kquant_panels_avx512(const WeightView& w, const Q8_KBlock* x, const int32_t* terms, int64_t T, float* y,
                               int64_t r0, int64_t r1) {
  if (T == 1) return gemv_kquant_panels_avx512(w, x, terms, y, r0, r1);  // decode; prefill: 1 panel x 8 tokens
  const KQuantPanels q = kquant_panels(w);
  if ((reinterpret_cast<uintptr_t>(q.base) & 63) != 0) return false;  // aligned loads need the aligned arena
  const int64_t p0 = r0 / kPanelRows, p1 = (r1 + kPanelRows - 1) / kPanelRows;
  switch (w.dtype) {
    case DType::Q4_K: run<DType::Q4_K, 1, 8>(q, x, terms, T, y, w.rows, p0, p1, w.rows); return true;
    case DType::Q5_K: run<DType::Q5_K, 1, 8>(q, x, terms, T, y, w.rows, p0, p1, w.rows); return true;
    case DType::Q6_K: run<DType::Q6_K, 1, 8>(q, x, terms, T, y, w.rows, p0, p1, w.rows); return true;
    case DType::IQ4_XS: run<DType::IQ4_XS, 1, 8>(q, x, terms, T, y, w.rows, p0, p1, w.rows); return true;
    default: return false;
  }
}

}  // namespace slimkv
