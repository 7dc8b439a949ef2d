// Select mode's fixed-budget row choice in AVX-512: row_select.h's combine_heads (max mode) and pick_rows fused —
// the same float arithmetic per row (so the same keys and the same rows, tested), the threshold found by a bitwise
// search of counts (passes of compare + popcount instead of a sort), the rows written by compress-stores in
// position order.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/row_select.h"

namespace slimkv {
namespace {

inline __mmask16 tail_mask(int64_t left) { return left >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << left) - 1); }

// order_key (row_select.cpp) of 16 floats: larger floats, larger unsigned keys.
inline __m512i order_keys(__m512 f) {
  const __m512i u = _mm512_castps_si512(f);
  const __mmask16 neg = _mm512_movepi32_mask(u);
  return _mm512_mask_xor_epi32(_mm512_or_si512(u, _mm512_set1_epi32(static_cast<int>(0x80000000u))), neg, u,
                               _mm512_set1_epi32(-1));
}

// 16 keys from i (i < n), those past n zero (plain loads where whole: masked ones missing L1 are slow on Zen 5).
inline __m512i load_keys(const uint32_t* keys, int64_t i, int64_t n) {
  return i + 16 <= n ? _mm512_loadu_si512(keys + i) : _mm512_maskz_loadu_epi32(tail_mask(n - i), keys + i);
}

// The lanes of m, packed, to p[0, popcount(m)): a compress in registers, then a masked store (VPCOMPRESSD to memory
// is microcoded on Zen 4 by AMD's guide; the difference was not measured here, on Zen 5).
template <class T>
inline void compress_store(T* p, __mmask16 m, __m512i v) {
  const __mmask16 first = static_cast<__mmask16>((1u << __builtin_popcount(m)) - 1);
  _mm512_mask_storeu_epi32(p, first, _mm512_maskz_compress_epi32(m, v));
}

int64_t count_at_least(const uint32_t* keys, int64_t n, uint32_t t) {
  const __m512i vt = _mm512_set1_epi32(static_cast<int>(t));
  int64_t c = 0;
  for (int64_t i = 0; i < n; i += 16) {
    c += __builtin_popcount(_mm512_mask_cmpge_epu32_mask(tail_mask(n - i), load_keys(keys, i, n), vt));
  }
  return c;
}

// The bucket (top 12 bits) of the take-th largest of keys[0, n) (1 <= take <= n), and how many keys lie above it.
// A few hot buckets take most keys, so one histogram's increments are a chain of dependent stores: past 4,096 keys
// four 16-bit histograms take interleaved keys (32 KB, in L1); below, their fixed cost is not repaid.
int32_t top_bucket(const uint32_t* keys, int64_t n, int64_t take, int64_t* above_out) {
  int32_t count[4096];
  if (n >= 4096 && n <= 4 * 65535) {
    uint16_t h[4][4096] = {};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      ++h[0][keys[i] >> 20], ++h[1][keys[i + 1] >> 20], ++h[2][keys[i + 2] >> 20], ++h[3][keys[i + 3] >> 20];
    }
    for (; i < n; ++i) ++h[0][keys[i] >> 20];
    for (int b = 0; b < 4096; ++b) count[b] = int32_t{h[0][b]} + h[1][b] + h[2][b] + h[3][b];
  } else {
    std::fill(count, count + 4096, 0);
    for (int64_t i = 0; i < n; ++i) ++count[keys[i] >> 20];
  }
  int64_t above = 0;
  int32_t b = 4095;
  while (above + count[b] < take) above += count[b--];
  *above_out = above;
  return b;
}

}  // namespace

int64_t pick_top_rows_avx512(const float* scores, int32_t num_q, int64_t s_stride, int64_t num_ctx, int64_t sinks,
                             int64_t window_begin, float scale, int64_t budget, int32_t* rows, uint32_t* keys) {
  const RowChoice c(num_ctx, sinks, window_begin, budget);
  const int64_t between = c.between, take = c.take;
  sinks = c.sinks;
  int64_t n = append_rows(rows, 0, 0, sinks);  // (rewritten below where the rows' buffer serves as scratch)
  if (c.all()) {
    n = append_rows(rows, n, sinks, c.window_begin);
  } else if (take > 0) {
    float top[16];
    auto load = [between](const float* p, int64_t i) {  // 16 scores from i, those past `between` -inf
      return i + 16 <= between ? _mm512_loadu_ps(p + i)
                               : _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tail_mask(between - i), p + i);
    };
    for (int32_t h = 0; h < num_q; ++h) {  // each head's best over the rows between
      const float* s = scores + h * s_stride + sinks;
      __m512 mx = _mm512_set1_ps(-INFINITY);
      for (int64_t i = 0; i < between; i += 16) mx = _mm512_max_ps(mx, load(s, i));
      top[h] = _mm512_reduce_max_ps(mx);
    }
    const __m512 vscale = _mm512_set1_ps(scale);
    for (int64_t i = 0; i < between; i += 16) {  // keys of max over heads of scale * (score - the head's best)
      const __mmask16 m = tail_mask(between - i);
      __m512 best = _mm512_set1_ps(-INFINITY);
      for (int32_t h = 0; h < num_q; ++h) {
        const __m512 v = load(scores + h * s_stride + sinks, i);
        best = _mm512_max_ps(best, _mm512_mul_ps(vscale, _mm512_sub_ps(v, _mm512_set1_ps(top[h]))));
      }
      _mm512_mask_storeu_epi32(keys + i, m, order_keys(best));
    }
    // The take-th largest key t: a histogram of the top 12 bits finds its bucket (and the keys above it), then the
    // bucket's keys, compressed out (into the rows' buffer, written only after), give the low 20 bits by a bitwise
    // search of counts over them alone.
    int64_t above = 0;  // keys in buckets above it
    const int32_t b = top_bucket(keys, between, take, &above);
    uint32_t* bucket = reinterpret_cast<uint32_t*>(rows);
    int64_t nb = 0;
    const __m512i vb = _mm512_set1_epi32(b);
    for (int64_t i = 0; i < between; i += 16) {
      const __mmask16 m = tail_mask(between - i);
      const __m512i k = load_keys(keys, i, between);
      const __mmask16 in = _mm512_mask_cmpeq_epi32_mask(m, _mm512_srli_epi32(k, 20), vb);
      compress_store(bucket + nb, in, k);
      nb += __builtin_popcount(in);
    }
    const int64_t need = take - above;  // the need-th largest of the bucket
    uint32_t t = static_cast<uint32_t>(b) << 20;
    for (int bit = 19; bit >= 0; --bit) {
      const uint32_t cand = t | (1u << bit);
      if (count_at_least(bucket, nb, cand) >= need) t = cand;
    }
    int64_t equal_left = need - ((t & 0xFFFFFu) == 0xFFFFFu ? 0 : count_at_least(bucket, nb, t + 1));
    n = append_rows(rows, 0, 0, sinks);  // (the bucket is done with)
    const __m512i vt = _mm512_set1_epi32(static_cast<int>(t));
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int64_t i = 0; i < between; i += 16) {  // in order: every key above t, the first equal ones
      const __mmask16 m = tail_mask(between - i);
      const __m512i k = load_keys(keys, i, between);
      const __mmask16 gt = _mm512_mask_cmpgt_epu32_mask(m, k, vt);
      uint32_t eq = _mm512_mask_cmpeq_epu32_mask(m, k, vt);
      if (equal_left <= 0) {
        eq = 0;
      } else if (__builtin_popcount(eq) > equal_left) {  // its lowest equal_left set bits
        uint32_t low = 0;
        for (int64_t k = 0; k < equal_left; ++k) low |= eq & (0u - eq), eq &= eq - 1;
        eq = low;
      }
      equal_left -= __builtin_popcount(eq);
      const __mmask16 sel = static_cast<__mmask16>(gt | eq);
      const __m512i idx = _mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int>(sinks + i)));
      compress_store(rows + n, sel, idx);
      n += __builtin_popcount(sel);
    }
  }
  return append_rows(rows, n, c.window_begin, num_ctx);
}

}  // namespace slimkv
