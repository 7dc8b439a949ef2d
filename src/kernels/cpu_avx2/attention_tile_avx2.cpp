// AVX2 tile kernel for prefill attention (attention_tile.h): per kv tile the needed keys are decoded once into a
// transposed page [k_dim, n] and the values into [n, v_dim]; scores come from 4-row x 16-key register blocks (one
// FMA chain per score over the head's values, in order), the online softmax updates each row, and 4-row x 16-column
// blocks of the accumulators take the tile's p x v. Scalar reference: attention_tile.cpp.
// Batch invariance: a row's arithmetic depends only on its own query and visible positions — columns no row of the
// tile sees are zeros, and a row adds exact zeros (fma(0, v, a) = a) for columns it does not see.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/attention_tile.h"
#include "kernels/cpu_avx2/decode_avx2.h"
#include "kernels/cpu_avx2/simd_avx2.h"

namespace slimkv {

__m256 exp256_ps(__m256 x);  // attention_avx2.cpp

namespace {

// s[r, c..c+16) = scale * q[r] · kt[:, c..c+16) for the rows r0..r0+R (R <= 4), kt [kd, n].
template <int R>
inline void score_block(const float* q, int64_t q_stride, int32_t kd, const float* kt, int64_t n, int64_t c,
                        float scale, float* s) {
  __m256 a[R][2];
#pragma GCC unroll 6
  for (int i = 0; i < R; ++i) a[i][0] = a[i][1] = _mm256_setzero_ps();
  const float* k = kt + c;
  for (int32_t d = 0; d < kd; ++d, k += n) {
    const __m256 k0 = _mm256_loadu_ps(k), k1 = _mm256_loadu_ps(k + 8);
#pragma GCC unroll 6
    for (int i = 0; i < R; ++i) {
      const __m256 qd = _mm256_broadcast_ss(q + i * q_stride + d);
      a[i][0] = _mm256_fmadd_ps(qd, k0, a[i][0]);
      a[i][1] = _mm256_fmadd_ps(qd, k1, a[i][1]);
    }
  }
  const __m256 vs = _mm256_set1_ps(scale);
#pragma GCC unroll 6
  for (int i = 0; i < R; ++i) {
    _mm256_storeu_ps(s + i * n + c, _mm256_mul_ps(a[i][0], vs));
    _mm256_storeu_ps(s + i * n + c + 8, _mm256_mul_ps(a[i][1], vs));
  }
}

// As score_block for 8 keys.
template <int R>
inline void score_block8(const float* q, int64_t q_stride, int32_t kd, const float* kt, int64_t n, int64_t c,
                         float scale, float* s) {
  __m256 a[R];
#pragma GCC unroll 6
  for (int i = 0; i < R; ++i) a[i] = _mm256_setzero_ps();
  const float* k = kt + c;
  for (int32_t d = 0; d < kd; ++d, k += n) {
    const __m256 k0 = _mm256_loadu_ps(k);
#pragma GCC unroll 6
    for (int i = 0; i < R; ++i) a[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(q + i * q_stride + d), k0, a[i]);
  }
#pragma GCC unroll 6
  for (int i = 0; i < R; ++i) _mm256_storeu_ps(s + i * n + c, _mm256_mul_ps(a[i], _mm256_set1_ps(scale)));
}

// acc[r, c..c+W) = alpha[r] * acc[r, ...] + sum_{j in [j0, j1)} p[r, j] * v[j, c..c+W) for rows r0..r0+R, W = 8 NV.
template <int R, int NV>
inline void value_block(const float* p, int64_t n, const float* v, int32_t vd, int64_t j0, int64_t j1,
                        const float* alpha, float* acc, int64_t acc_stride, int32_t c) {
  __m256 a[R][NV];
#pragma GCC unroll 6
  for (int i = 0; i < R; ++i) {
    const __m256 al = _mm256_set1_ps(alpha[i]);
#pragma GCC unroll 2
    for (int x = 0; x < NV; ++x) a[i][x] = _mm256_mul_ps(_mm256_loadu_ps(acc + i * acc_stride + c + 8 * x), al);
  }
  const float* vr = v + j0 * vd + c;
  for (int64_t j = j0; j < j1; ++j, vr += vd) {
    __m256 vv[NV];
#pragma GCC unroll 2
    for (int x = 0; x < NV; ++x) vv[x] = _mm256_loadu_ps(vr + 8 * x);
#pragma GCC unroll 6
    for (int i = 0; i < R; ++i) {
      const __m256 pj = _mm256_broadcast_ss(p + i * n + j);
#pragma GCC unroll 2
      for (int x = 0; x < NV; ++x) a[i][x] = _mm256_fmadd_ps(pj, vv[x], a[i][x]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 2
    for (int x = 0; x < NV; ++x) _mm256_storeu_ps(acc + i * acc_stride + c + 8 * x, a[i][x]);
  }
}

template <int R>
void value_rows(const float* p, int64_t n, const float* v, int32_t vd, int64_t j0, int64_t j1, const float* alpha,
                float* acc, int64_t acc_stride) {
  int32_t c = 0;
  for (; c + 16 <= vd; c += 16) value_block<R, 2>(p, n, v, vd, j0, j1, alpha, acc, acc_stride, c);
  if (c < vd) value_block<R, 1>(p, n, v, vd, j0, j1, alpha, acc, acc_stride, c);
}

template <int R>
void score_rows(const float* q, int64_t q_stride, int32_t kd, const float* kt, int64_t n, int64_t c0, int64_t c1,
                float scale, float* s) {
  int64_t c = c0;
  for (; c + 16 <= c1; c += 16) score_block<R>(q, q_stride, kd, kt, n, c, scale, s);
  if (c < c1) score_block8<R>(q, q_stride, kd, kt, n, c, scale, s);
}

// The visible columns [0, n) of row r in the kv tile starting at a, as two ranges (sinks, then the window).
struct ColRanges {
  int64_t s0, s1, w0, w1;
};
inline ColRanges row_cols(const AttendTile& t, int32_t r, int64_t a, int64_t n, int64_t begin, int64_t end) {
  const int64_t lo = std::max(begin, a), hi = std::min(end, a + n);
  const int64_t sink = t.sink ? t.sink[r] : 0;
  ColRanges c;
  c.s0 = lo - a, c.s1 = std::max(c.s0, std::min(hi, sink) - a);
  c.w0 = std::max(lo, t.lo[r]) - a, c.w1 = std::max(c.w0, std::min(hi, t.hi[r]) - a);
  return c;
}

// Lanes of the columns [c, c + 8) that row's ranges hold (all ones / zeros per lane).
inline __m256 seen_mask(const ColRanges& cr, int64_t c) {
  const __m256i j = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(c)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  auto in = [&](int64_t a, int64_t b) {  // a <= j < b
    return _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(a)), j),
                               _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(b)), j));
  };
  return _mm256_castsi256_ps(_mm256_or_si256(in(cr.s0, cr.s1), in(cr.w0, cr.w1)));
}

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// Softmax update of row r over columns [c0, c1) of its scores (in place -> probabilities, zero where not visible).
// Returns alpha (the old state's factor); a row that sees nothing here keeps its state (alpha 1, probabilities 0).
float softmax_row(float* s, const ColRanges& cr, int64_t c0, int64_t c1, float* m, float* l) {
  const bool any = cr.s1 > cr.s0 || cr.w1 > cr.w0;
  if (!any) {
    std::fill(s + c0, s + c1, 0.0f);
    return 1.0f;
  }
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  __m256 vmx = _mm256_set1_ps(*m);
  for (int64_t j = c0; j < c1; j += 8) vmx = _mm256_max_ps(vmx, _mm256_blendv_ps(ninf, _mm256_loadu_ps(s + j), seen_mask(cr, j)));
  const float mx = hmax(vmx);
  const __m256 vm = _mm256_set1_ps(mx);
  __m256 sum = _mm256_setzero_ps();
  for (int64_t j = c0; j < c1; j += 8) {
    const __m256 e = _mm256_and_ps(exp256_ps(_mm256_sub_ps(_mm256_loadu_ps(s + j), vm)), seen_mask(cr, j));
    _mm256_storeu_ps(s + j, e);
    sum = _mm256_add_ps(sum, e);
  }
  const float alpha = std::exp(*m - mx);  // 0 for a row's first visible kv tile (m = -inf)
  *l = *l * alpha + simd::hsum(sum);
  *m = mx;
  return alpha;
}

// Keys of positions a + [c0, c1) (c0, c1 multiples of 8) decoded and transposed into kt [kd, n], values into
// v [n, vd]; columns no row needs are zeros (their pages may be freed: never read).
void decode_tile(const PagedKv& kv, int64_t a, int64_t c0, int64_t c1, const bool* need, int64_t n, float* kt,
                 float* v) {
  const int32_t kd = kv.k_dim, vd = kv.v_dim;
  alignas(32) float rows[8 * kMaxTileHeadDim];  // [8, kd] row-major
  for (int64_t j = c0; j < c1; j += 8) {
    for (int i = 0; i < 8; ++i) {
      if (need[j + i]) {
        simd::decode_key(kv, kv.k_row(a + j + i), rows + i * kd);
        simd::decode_row(kv.v_row(a + j + i), vd, kv.value_dtype(), v + (j + i) * vd);
      } else {
        std::memset(rows + i * kd, 0, sizeof(float) * kd);
        std::memset(v + (j + i) * vd, 0, sizeof(float) * vd);
      }
    }
    for (int32_t d = 0; d < kd; d += 8) {  // 8 x 8 transposes
      __m256 r[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) r[i] = _mm256_load_ps(rows + i * kd + d);
      const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
      const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
      const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
      const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
      const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
      const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
      const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
      const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
      float* o = kt + static_cast<int64_t>(d) * n + j;
      _mm256_storeu_ps(o + 0 * n, _mm256_permute2f128_ps(u0, u4, 0x20));
      _mm256_storeu_ps(o + 1 * n, _mm256_permute2f128_ps(u1, u5, 0x20));
      _mm256_storeu_ps(o + 2 * n, _mm256_permute2f128_ps(u2, u6, 0x20));
      _mm256_storeu_ps(o + 3 * n, _mm256_permute2f128_ps(u3, u7, 0x20));
      _mm256_storeu_ps(o + 4 * n, _mm256_permute2f128_ps(u0, u4, 0x31));
      _mm256_storeu_ps(o + 5 * n, _mm256_permute2f128_ps(u1, u5, 0x31));
      _mm256_storeu_ps(o + 6 * n, _mm256_permute2f128_ps(u2, u6, 0x31));
      _mm256_storeu_ps(o + 7 * n, _mm256_permute2f128_ps(u3, u7, 0x31));
    }
  }
}

}  // namespace

bool attend_tile_avx2(const AttendTile& tile, const PagedKv& kv, int64_t begin, int64_t end, float scale,
                      TileState& st) {
  const int32_t kd = kv.k_dim, vd = kv.v_dim, R = tile.num_rows;
  if (kd % 8 != 0 || kv.k_split % 8 != 0 || !tile_fits(kd, vd) || !kv.contiguous() || kv.num_bias_rows > 0 ||
      R > kMaxTileQueryRows) {
    return false;
  }
  const int64_t n = kv_tile_rows(kv.block_size);
  float* kt = st.scratch;                  // [kd, n] keys, transposed
  float* v = kt + static_cast<int64_t>(kd) * n;  // [n, vd]
  float* s = v + n * vd;                   // [R, n] scores, then probabilities
  float* alpha = s + kMaxTileQueryRows * n;  // [R]
  int32_t edge[1024 + 1];  // n <= 256: +1 where a row's range starts, -1 past its end
  bool need[1024];
  ColRanges cr[kMaxTileQueryRows];
  for (int64_t a = begin / n * n; a < end; a += n) {
    std::fill(edge, edge + n + 1, 0);
    int64_t c0 = n, c1 = 0;
    for (int32_t r = 0; r < R; ++r) {
      cr[r] = row_cols(tile, r, a, n, begin, end);
      if (cr[r].s1 > cr[r].s0) ++edge[cr[r].s0], --edge[cr[r].s1], c0 = std::min(c0, cr[r].s0), c1 = std::max(c1, cr[r].s1);
      if (cr[r].w1 > cr[r].w0) ++edge[cr[r].w0], --edge[cr[r].w1], c0 = std::min(c0, cr[r].w0), c1 = std::max(c1, cr[r].w1);
    }
    if (c1 <= c0) continue;  // no row sees anything here
    c0 = c0 / 8 * 8, c1 = (c1 + 7) / 8 * 8;
    for (int64_t j = 0, open = 0; j < c1; ++j) need[j] = (open += edge[j]) > 0;
    decode_tile(kv, a, c0, c1, need, n, kt, v);
    int32_t r = 0;  // 6-row register blocks (12 accumulators), then 4, then 1: the same chain per row in each
    for (; r + 6 <= R; r += 6) score_rows<6>(tile.q + r * tile.q_stride, tile.q_stride, kd, kt, n, c0, c1, scale, s + r * n);
    for (; r + 4 <= R; r += 4) score_rows<4>(tile.q + r * tile.q_stride, tile.q_stride, kd, kt, n, c0, c1, scale, s + r * n);
    for (; r < R; ++r) score_rows<1>(tile.q + r * tile.q_stride, tile.q_stride, kd, kt, n, c0, c1, scale, s + r * n);
    for (r = 0; r < R; ++r) alpha[r] = softmax_row(s + r * n, cr[r], c0, c1, st.m + r, st.l + r);
    for (r = 0; r + 6 <= R; r += 6) {
      value_rows<6>(s + r * n, n, v, vd, c0, c1, alpha + r, st.acc + r * st.acc_stride, st.acc_stride);
    }
    for (; r + 4 <= R; r += 4) {
      value_rows<4>(s + r * n, n, v, vd, c0, c1, alpha + r, st.acc + r * st.acc_stride, st.acc_stride);
    }
    for (; r < R; ++r) value_rows<1>(s + r * n, n, v, vd, c0, c1, alpha + r, st.acc + r * st.acc_stride, st.acc_stride);
  }
  return true;
}

}  // namespace slimkv
