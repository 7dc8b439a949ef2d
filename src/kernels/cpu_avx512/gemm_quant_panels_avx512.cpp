// AVX-512 VNNI matmul over Q4_0 / Q8_0 panels (matmul.h's QuantPanels): per block, the 16 rows' unsigned
// weights (Q4_0's nibbles in [0, 15]; Q8_0's values + 128) times the token's int8 activations, 4 at a time — one
// vpdpbusd serves 16 rows — minus the offset (8 or 128) x the block's activation sum (exact: the integer dot of
// the signed weights), then one scale multiply-add for the 16 rows.
// Tiles: P panels x TT tokens, each (row, token) accumulating its blocks in order whatever P and TT — batched ==
// single, bit for bit. Reference: matmul_quant_panels_ref (kernels/matmul.cpp; tests/kernels compares them).
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu_avx512/panel_tiles.h"
#include "kernels/dot.h"
#include "kernels/matmul.h"

namespace slimkv {
namespace {

// Y rows of P panels (from panel p0) for TT tokens. x: [T, nb] Q8_0 blocks; xcorr: [T, nb] the weights' offset x
// each block's sum. G: 64-byte weight groups per block (4: Q4_0's nibble pairs, 8: Q8_0).
template <int G, int P, int TT>
void tile(const QuantPanels& q, int64_t p0, const Q8_0Block* x, const int32_t* xcorr, float* y, int64_t ldy,
          int64_t rows_left) {
  constexpr bool kQ4 = G == 4;
  const int64_t nb = q.nb;
  __m512 acc[P][TT];
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
    for (int t = 0; t < TT; ++t) acc[p][t] = _mm512_setzero_ps();
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  for (int64_t k = 0; k < nb; ++k) {
    __m512i op[P][kQ4 ? 8 : 1];  // Q4_0: the unpacked nibbles, low groups then high ones (Q8_0 reads memory)
    const uint8_t* qs[P];
    __m512 dw[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) {
      qs[p] = q.qs(p0 + p, k);
      if constexpr (TT == 1) {  // decode: P streams of weights, prefetched 4 blocks ahead (as the K-quant walk)
#pragma GCC unroll 8
        for (int j = 0; j < G; ++j) {
          _mm_prefetch(reinterpret_cast<const char*>(qs[p] + 4 * G * 64 + 64 * j), _MM_HINT_T0);
        }
        if (k % 2 == 0) _mm_prefetch(reinterpret_cast<const char*>(q.scales(p0 + p, k) + 16 * 8), _MM_HINT_T0);
      }
      if constexpr (kQ4) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const __m512i v = _mm512_load_si512(qs[p] + 64 * j);
          op[p][j] = _mm512_and_si512(v, low4);
          op[p][4 + j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
        }
      }
      dw[p] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q.scales(p0 + p, k))));
    }
#pragma GCC unroll 4
    for (int t = 0; t < TT; ++t) {
      const Q8_0Block& a = x[t * nb + k];
      const __m512 dx = _mm512_set1_ps(_cvtsh_ss(a.d));
      const __m512i corr = _mm512_set1_epi32(xcorr[t * nb + k]);
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) {
        __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();  // two chains; integer sums are exact
#pragma GCC unroll 8
        for (int j = 0; j < 8; j += 2) {
          if constexpr (kQ4) {
            s0 = _mm512_dpbusd_epi32(s0, op[p][j], bcast4(a.qs + 4 * j));
            s1 = _mm512_dpbusd_epi32(s1, op[p][j + 1], bcast4(a.qs + 4 * j + 4));
          } else {
            s0 = _mm512_dpbusd_epi32(s0, _mm512_load_si512(qs[p] + 64 * j), bcast4(a.qs + 4 * j));
            s1 = _mm512_dpbusd_epi32(s1, _mm512_load_si512(qs[p] + 64 * j + 64), bcast4(a.qs + 4 * j + 4));
          }
        }
        const __m512i isum = _mm512_sub_epi32(_mm512_add_epi32(s0, s1), corr);
        acc[p][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw[p], dx), acc[p][t]);
      }
    }
  }
  store_tile(acc, y, ldy, rows_left);
}

template <int G, int P, int TT>
void run(const QuantPanels& q, const Q8_0Block* x, const int32_t* xcorr, int64_t T, float* y, int64_t ldy,
         int64_t p0, int64_t p1, int64_t rows) {
  const int64_t nb = q.nb;
  walk_tiles<P, TT>(T, p0, p1, [&](auto panels, auto tokens, int64_t p, int64_t t) {
    tile<G, decltype(panels)::value, decltype(tokens)::value>(q, p, x + t * nb, xcorr + t * nb,
                                                              y + t * ldy + p * kPanelRows, ldy, rows - p * kPanelRows);
  });
}

}  // namespace

bool gemm_quant_panels_avx512(const WeightView& w, const Q8_0Block* x, const int32_t* xcorr, int64_t T, float* y,
                              int64_t r0, int64_t r1) {
  const bool q4 = w.dtype == DType::Q4_0;
  if (!q4 && w.dtype != DType::Q8_0) return false;
  const int64_t p0 = r0 / kPanelRows, p1 = (r1 + kPanelRows - 1) / kPanelRows;
  const QuantPanels q = quant_panels(w);
  // Aligned loads need 64-byte aligned weight groups: the packing arena is, and quant_panels_fit's even block count.
  if ((reinterpret_cast<uintptr_t>(q.base) & 63) != 0 || !quant_panels_fit(w)) return false;
  if (q4) {
    if (T == 1) run<4, 4, 1>(q, x, xcorr, T, y, w.rows, p0, p1, w.rows);  // decode: 4 chains in flight
    else run<4, 2, 4>(q, x, xcorr, T, y, w.rows, p0, p1, w.rows);
  } else {
    if (T == 1) run<8, 2, 1>(q, x, xcorr, T, y, w.rows, p0, p1, w.rows);
    else run<8, 2, 4>(q, x, xcorr, T, y, w.rows, p0, p1, w.rows);
  }
  return true;
}

}  // namespace slimkv
