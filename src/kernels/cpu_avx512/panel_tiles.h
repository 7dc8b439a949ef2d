// Shared by the AVX-512 panel kernels (F32 / F16, Q4_0 / Q8_0, K-quants): the masked store of a P panels x TT tokens
// accumulator tile (rows past the matrix dropped), the walk covering panels [p0, p1) x tokens [0, T) with P x TT
// tiles, then 1-token and 1-panel edges, and the VNNI kernels' activation broadcast and bit-mask load.
// Must not know: weight layouts.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/matmul.h"

namespace slimkv {

inline __m512i bcast4(const int8_t* p) {  // 4 activation bytes to every 32-bit lane
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// 64 bits at p (any alignment) as a byte mask.
inline __mmask64 load_mask(const uint8_t* p) {
  uint64_t m;
  std::memcpy(&m, p, 8);
  return _cvtu64_mask64(m);
}

// y[t * ldy + p * 16 + i] = acc[p][t] lane i, for the rows_left rows of the tile that exist.
template <int P, int TT>
inline void store_tile(const __m512 (&acc)[P][TT], float* y, int64_t ldy, int64_t rows_left) {
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) {
    const int64_t n = std::min<int64_t>(kPanelRows, rows_left - p * kPanelRows);
    if (n <= 0) break;
    const __mmask16 m = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
#pragma GCC unroll 16
    for (int t = 0; t < TT; ++t) _mm512_mask_storeu_ps(y + t * ldy + p * kPanelRows, m, acc[p][t]);
  }
}

// tile(std::integral_constant<int, panels>, std::integral_constant<int, tokens>, first panel, first token).
template <int P, int TT, typename Tile>
inline void walk_tiles(int64_t T, int64_t p0, int64_t p1, Tile tile) {
  auto one = [&](auto panels, int64_t p) {
    int64_t t = 0;
    for (; t + TT <= T; t += TT) tile(panels, std::integral_constant<int, TT>{}, p, t);
    for (; t < T; ++t) tile(panels, std::integral_constant<int, 1>{}, p, t);
  };
  int64_t p = p0;
  for (; p + P <= p1; p += P) one(std::integral_constant<int, P>{}, p);
  for (; p < p1; ++p) one(std::integral_constant<int, 1>{}, p);
}

}  // namespace slimkv
