// AVX-512 VNNI matmul over Q4_0 panels (matmul.h's Q4_0Panel): per block, the 16 rows' unsigned nibbles
// [0, 15] times the token's int8 activations, 4 at a time (one vpdpbusd serves 16 rows), minus 8 x the block's
// activation sum (exact: the integer dot of (q - 8) x), then one scale multiply-add for the 16 rows.
// Tiles: P panels x TT tokens, each (row, token) accumulating its blocks in order whatever P and TT — batched ==
// single, bit for bit. Reference: matmul_q4_0_panels_ref (kernels/matmul.cpp; tests/kernels compares them).
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/dot.h"
#include "kernels/matmul.h"

namespace slimkv {
namespace {

// y rows [p0 * 16, ...) of P panels for TT tokens. x: [T, nb] Q8_0 blocks; xsum8: [T, nb] 8 x each block's sum.
template <int P, int TT>
void tile(const Q4_0Panel* units, int64_t nb, const Q8_0Block* x, const int32_t* xsum8, float* y, int64_t ldy,
          int64_t rows_left) {
  __m512 acc[P][TT];
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
    for (int t = 0; t < TT; ++t) acc[p][t] = _mm512_setzero_ps();
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  for (int64_t k = 0; k < nb; ++k) {
    __m512i lo[P][4], hi[P][4];
    __m512 dw[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) {
      const Q4_0Panel& u = units[p * nb + k];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m512i q = _mm512_loadu_si512(u.qs[j]);
        lo[p][j] = _mm512_and_si512(q, low4);
        hi[p][j] = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
      }
      dw[p] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(u.d)));
    }
#pragma GCC unroll 4
    for (int t = 0; t < TT; ++t) {
      const Q8_0Block& a = x[t * nb + k];
      const auto* xq = reinterpret_cast<const int32_t*>(a.qs);
      const __m512 dx = _mm512_set1_ps(_cvtsh_ss(a.d));
      const __m512i corr = _mm512_set1_epi32(xsum8[t * nb + k]);
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) {
        __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();  // two chains; integer sums are exact
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          int32_t lo4, hi4;
          std::copy_n(reinterpret_cast<const char*>(xq + j), 4, reinterpret_cast<char*>(&lo4));
          std::copy_n(reinterpret_cast<const char*>(xq + 4 + j), 4, reinterpret_cast<char*>(&hi4));
          s0 = _mm512_dpbusd_epi32(s0, lo[p][j], _mm512_set1_epi32(lo4));
          s1 = _mm512_dpbusd_epi32(s1, hi[p][j], _mm512_set1_epi32(hi4));
        }
        const __m512i isum = _mm512_sub_epi32(_mm512_add_epi32(s0, s1), corr);
        acc[p][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw[p], dx), acc[p][t]);
      }
    }
  }
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p) {
    const int64_t n = std::min<int64_t>(kPanelRows, rows_left - p * kPanelRows);
    if (n <= 0) break;
    const __mmask16 m = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
#pragma GCC unroll 4
    for (int t = 0; t < TT; ++t) _mm512_mask_storeu_ps(y + t * ldy + p * kPanelRows, m, acc[p][t]);
  }
}

template <int P, int TT>
void run(const Q4_0Panel* units, int64_t nb, const Q8_0Block* x, const int32_t* xsum8, int64_t T, float* y,
         int64_t ldy, int64_t p0, int64_t p1, int64_t rows) {
  int64_t p = p0;
  auto one = [&](auto PP, int64_t pp) {
    int64_t t = 0;
    for (; t + TT <= T; t += TT) {
      tile<decltype(PP)::value, TT>(units + pp * nb, nb, x + t * nb, xsum8 + t * nb, y + t * ldy + pp * kPanelRows,
                                    ldy, rows - pp * kPanelRows);
    }
    for (; t < T; ++t) {
      tile<decltype(PP)::value, 1>(units + pp * nb, nb, x + t * nb, xsum8 + t * nb, y + t * ldy + pp * kPanelRows,
                                   ldy, rows - pp * kPanelRows);
    }
  };
  for (; p + P <= p1; p += P) one(std::integral_constant<int, P>{}, p);
  for (; p < p1; ++p) one(std::integral_constant<int, 1>{}, p);
}

}  // namespace

bool gemm_q4_0_panels_avx512(const WeightView& w, const Q8_0Block* x, int64_t T, float* y, int64_t r0, int64_t r1) {
  const int64_t nb = w.cols / kQuantBlock;
  thread_local std::vector<int32_t> xsum8;  // [T, nb] 8 x the sum of each activation block
  xsum8.resize(static_cast<size_t>(T * nb));
  for (int64_t i = 0; i < T * nb; ++i) {
    int32_t s = 0;
    for (int8_t v : x[i].qs) s += v;
    xsum8[i] = 8 * s;
  }
  const auto* units = static_cast<const Q4_0Panel*>(w.data);
  const int64_t p0 = r0 / kPanelRows, p1 = (r1 + kPanelRows - 1) / kPanelRows;
  if (T == 1) {
    run<4, 1>(units, nb, x, xsum8.data(), T, y, w.rows, p0, p1, w.rows);  // decode: 4 panels' chains in flight
  } else {
    run<2, 4>(units, nb, x, xsum8.data(), T, y, w.rows, p0, p1, w.rows);
  }
  return true;
}

}  // namespace slimkv
