// The decode walk of one GQA group over a sequence's pages (AVX2), for the common case: rows in order (full
// attention), one-part keys, keys and values of 64 or 128 values stored as f16 / int8 / int4 / tq4. Each page's
// records are decoded once (the dtype fixed at compile time) into a scratch page in L1 that every head of the group
// scores and accumulates from, the pages ahead prefetched row by row. Integer keys are scored as the AVX-512 kernel
// scores them: the query on the integer grid, exact int16 sums (VPMADDWD), scaled once per 8 rows; integer values'
// row scales go into the probabilities. Scalar reference: cpu_scalar.cpp (equal within 1e-5, tested).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu_avx2/attention_blocks_avx2.h"
#include "kernels/cpu_avx2/simd_avx2.h"
#include "kernels/dot.h"
#include "kernels/kv_codec.h"

namespace slimkv {
namespace {

// Pages ahead of the one decoded whose rows are prefetched, one row per decoded row. (PagedKv::prefetch's burst of a
// whole page's lines at once measured nothing here: this Zen 3 walk at 16K x 8 took the same time with it, without
// it and at 8 pages; spread over the rows, 4 pages ahead, the f16 walk took half the time, tq4's a third.)
constexpr int64_t kAheadPages = 4;

using simd::add_value_rows;
using simd::dot8_rows;
using simd::exp_shifted;
using simd::kv_row_scale;
using simd::reduce8_epi32;
using simd::scale_rows;

// One page's records decoded once for every head of the group. Keys: f16 rows to floats; integer codes (int8 / int4
// / tq4) widened to int16 in the layout the query is arranged in (arrange_query), each row's fp16 scale apart.
// Values: floats — f16 as stored, integer codes as their levels with each row's scale apart (folded into its
// probabilities). Row r's step also prefetches row r of the page `ahead` (null: none): spread over the rows.
inline void prefetch_row(const uint8_t* ahead, int64_t r, int64_t stride, int64_t bytes) {
  if (ahead == nullptr) return;
  const uint8_t* p = ahead + r * stride;
  for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o, 0, 3);
  __builtin_prefetch(p + bytes - 1, 0, 3);  // a record straddling one more line
}

inline __m256i level_table(bool tq4) {  // the 16 int8 levels a nibble indexes, in each 128-bit lane
  return _mm256_broadcastsi128_si256(tq4 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(tq4_levels()))
                                         : _mm_setr_epi8(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7));
}

// 64 values (32 bytes, two a byte, low nibble first) -> their levels: *even = values 0, 2, .., 30 | 32, .., 62 (the
// two 128-bit lanes), returned = values 1, 3, .., 31 | 33, .., 63.
inline __m256i nibble_levels(const uint8_t* p, __m256i table, __m256i* even) {
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), low4 = _mm256_set1_epi8(0x0F);
  *even = _mm256_shuffle_epi8(table, _mm256_and_si256(b, low4));
  return _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(b, 4), low4));
}

// n rows -> out [n, D] floats (D = 8 * NV) and, for integer codes, d [n] the rows' scales (f16: d untouched).
template <int NV>
using ValuePageDecode = void (*)(const uint8_t* row, int64_t stride, int64_t n, const uint8_t* ahead, float* out,
                                 float* d);

template <int NV>
void values_f16(const uint8_t* row, int64_t stride, int64_t n, const uint8_t* ahead, float* out, float*) {
  for (int64_t r = 0; r < n; ++r, row += stride, out += 8 * NV) {
    prefetch_row(ahead, r, stride, 16 * NV);
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) {
      _mm256_storeu_ps(out + 8 * j, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16 * j))));
    }
  }
}

inline void store_levels(__m128i lv, float* out) {  // 16 int8 levels -> 16 floats
  _mm256_storeu_ps(out, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lv)));
  _mm256_storeu_ps(out + 8, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lv, 8))));
}

template <int NV>
void values_int8(const uint8_t* row, int64_t stride, int64_t n, const uint8_t* ahead, float* out, float* d) {
  for (int64_t r = 0; r < n; ++r, row += stride, out += 8 * NV) {
    prefetch_row(ahead, r, stride, 2 + 8 * NV);
    d[r] = kv_row_scale(row);
#pragma GCC unroll 8
    for (int j = 0; j < NV / 2; ++j) {
      store_levels(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 + 16 * j)), out + 16 * j);
    }
  }
}

template <int NV, bool kTq4>
void values_nibbles(const uint8_t* row, int64_t stride, int64_t n, const uint8_t* ahead, float* out, float* d) {
  static_assert(NV % 8 == 0, "64-value chunks");
  const __m256i table = level_table(kTq4);
  for (int64_t r = 0; r < n; ++r, row += stride, out += 8 * NV) {
    prefetch_row(ahead, r, stride, 2 + 4 * NV);
    d[r] = kv_row_scale(row);
#pragma GCC unroll 2
    for (int c = 0; c < NV / 8; ++c) {  // natural order: interleave the nibbles before the lookup
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 + 32 * c));
      const __m256i low4 = _mm256_set1_epi8(0x0F);
      const __m256i lo = _mm256_and_si256(b, low4), hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), low4);
      const __m256i a = _mm256_shuffle_epi8(table, _mm256_unpacklo_epi8(lo, hi));  // [v0-15 | v32-47]
      const __m256i e = _mm256_shuffle_epi8(table, _mm256_unpackhi_epi8(lo, hi));  // [v16-31 | v48-63]
      float* o = out + 64 * c;
      store_levels(_mm256_castsi256_si128(a), o);
      store_levels(_mm256_castsi256_si128(e), o + 16);
      store_levels(_mm256_extracti128_si256(a, 1), o + 32);
      store_levels(_mm256_extracti128_si256(e, 1), o + 48);
    }
  }
}

template <int NV>
ValuePageDecode<NV> value_decoder(KvDtype dt) {
  switch (dt) {
    case KvDtype::F16: return values_f16<NV>;
    case KvDtype::Int8: return values_int8<NV>;
    case KvDtype::Int4: return values_nibbles<NV, false>;
    case KvDtype::Tq4: return values_nibbles<NV, true>;
    default: return nullptr;
  }
}

// Integer keys: n rows -> codes [n, D] int16 in the query's layout, d [n] the rows' scales.
template <int NV>
using CodePageDecode = void (*)(const uint8_t* row, int64_t stride, int64_t n, const uint8_t* ahead, int16_t* codes,
                                float* d);

template <int NV>
void codes_int8(const uint8_t* row, int64_t stride, int64_t n, const uint8_t* ahead, int16_t* codes, float* d) {
  for (int64_t r = 0; r < n; ++r, row += stride, codes += 8 * NV) {  // natural order
    prefetch_row(ahead, r, stride, 2 + 8 * NV);
    d[r] = kv_row_scale(row);
#pragma GCC unroll 8
    for (int j = 0; j < NV / 2; ++j) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 + 16 * j));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + 16 * j), _mm256_cvtepi8_epi16(b));
    }
  }
}

template <int NV, bool kTq4>
void codes_nibbles(const uint8_t* row, int64_t stride, int64_t n, const uint8_t* ahead, int16_t* codes, float* d) {
  static_assert(NV % 8 == 0, "64-value chunks");
  const __m256i table = level_table(kTq4);
  for (int64_t r = 0; r < n; ++r, row += stride, codes += 8 * NV) {
    prefetch_row(ahead, r, stride, 2 + 4 * NV);
    d[r] = kv_row_scale(row);
#pragma GCC unroll 2
    for (int c = 0; c < NV / 8; ++c) {  // per 64 values: [even 0-30][even 32-62][odd 1-31][odd 33-63]
      __m256i even;
      const __m256i odd = nibble_levels(row + 2 + 32 * c, table, &even);
      __m256i* o = reinterpret_cast<__m256i*>(codes + 64 * c);
      _mm256_storeu_si256(o, _mm256_cvtepi8_epi16(_mm256_castsi256_si128(even)));
      _mm256_storeu_si256(o + 1, _mm256_cvtepi8_epi16(_mm256_extracti128_si256(even, 1)));
      _mm256_storeu_si256(o + 2, _mm256_cvtepi8_epi16(_mm256_castsi256_si128(odd)));
      _mm256_storeu_si256(o + 3, _mm256_cvtepi8_epi16(_mm256_extracti128_si256(odd, 1)));
    }
  }
}

template <int NV>
CodePageDecode<NV> code_decoder(KvDtype dt) {
  switch (dt) {
    case KvDtype::Int8: return codes_int8<NV>;
    case KvDtype::Int4: return codes_nibbles<NV, false>;
    case KvDtype::Tq4: return codes_nibbles<NV, true>;
    default: return nullptr;
  }
}

// The query head on the integer grid (kv_codec.h), arranged as codes_* lay a row out: q16 [D]; returns the grid
// step (max|q| / kQueryGridMax, as round_query_to_grid: a query already on the grid gets its integers back exactly).
float arrange_query(const float* q, int32_t dim, bool nibbles, int16_t* q16) {
  float amax = 0;
  for (int32_t i = 0; i < dim; ++i) amax = std::max(amax, std::fabs(q[i]));
  const float id = amax > 0 ? static_cast<float>(kQueryGridMax) / amax : 0.0f;
  for (int32_t i = 0; i < dim; ++i) {
    const int32_t c = i % 64, at = nibbles ? i - c + (c % 2) * 32 + (c / 32) * 16 + (c % 32) / 2 : i;
    q16[at] = static_cast<int16_t>(std::nearbyint(q[i] * id));
  }
  return amax / static_cast<float>(kQueryGridMax);
}

// The exact integer q.k of 8 code rows (D int16 each, D apart) with one arranged query.
template <int NV>
inline __m256i dot8_codes(const int16_t* q16, const int16_t* k) {
  __m256i a[8];
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r) {
    const int16_t* kr = k + r * 8 * NV;
    __m256i acc = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q16)),
                                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kr)));
#pragma GCC unroll 8
    for (int c = 1; c < NV / 2; ++c) {
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q16 + 16 * c)),
                                                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kr + 16 * c))));
    }
    a[r] = acc;
  }
  return reduce8_epi32(a);
}

// Stores 8 scores of rows [i, i + 8) of a page holding n rows (the partial last group: its rows past n dropped) and
// folds them into the running maximum.
inline void store_scores(__m256 s, int64_t i, int64_t n, float* sh, __m256* vmx) {
  if (i + 8 <= n) {
    _mm256_storeu_ps(sh + i, s);
    *vmx = _mm256_max_ps(*vmx, s);
    return;
  }
  alignas(32) float tmp[8];
  _mm256_store_ps(tmp, s);
  for (int64_t j = 0; i + j < n; ++j) {
    sh[i + j] = tmp[j];
    *vmx = _mm256_max_ps(*vmx, _mm256_set1_ps(tmp[j]));
  }
}

inline float max_lane(__m256 v) {
  alignas(32) float tmp[8];
  _mm256_store_ps(tmp, v);
  return *std::max_element(tmp, tmp + 8);
}

struct PageScratch {  // one thread's decoded page: floats or int16 codes, and the rows' scales
  std::vector<float> f;     // [round_up(bs, 8), D]
  std::vector<int16_t> i;   // [round_up(bs, 8), D]
  std::vector<float> d, w;  // [round_up(bs, 8)] scales; [num_q, bs] probabilities x scales
};

// Scores (scale x q.k) of every head over the rows, page by page; each head's maximum into mx. f16 keys in floats
// (8-row transpose-reduce, as the other walks); integer codes as exact integer sums scaled once per 8 rows.
template <int NV>
void score_pages(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx, float scale,
                 PageScratch& ps, float* scores, int64_t s_stride, float* mx) {
  constexpr int D = 8 * NV;
  const int32_t bs = kv.block_size;
  const CodePageDecode<NV> codes = code_decoder<NV>(kv.dtype);
  const bool nibbles = kv.dtype == KvDtype::Int4 || kv.dtype == KvDtype::Tq4;
  alignas(32) int16_t q16[kMaxAttendGroup][D];
  float step_scale[kMaxAttendGroup];
  __m256 vmx[kMaxAttendGroup];
  for (int32_t h = 0; h < num_q; ++h) {
    vmx[h] = _mm256_set1_ps(-INFINITY);
    if (codes) step_scale[h] = arrange_query(q + h * q_stride, D, nibbles, q16[h]) * scale;
  }
  const __m256 vscale = _mm256_set1_ps(scale);
  for (int64_t t0 = 0; t0 < num_ctx; t0 += bs) {
    const int64_t n = std::min<int64_t>(bs, num_ctx - t0), n8 = (n + 7) / 8 * 8, ta = t0 + kAheadPages * bs;
    const uint8_t* ahead = ta + bs <= num_ctx ? kv.k_row(ta) : nullptr;
    if (codes) {
      codes(kv.k_row(t0), kv.k_row_bytes, n, ahead, ps.i.data(), ps.d.data());
      if (n8 > n) std::memset(ps.i.data() + n * D, 0, sizeof(int16_t) * static_cast<size_t>((n8 - n) * D));
      for (int64_t r = n; r < n8; ++r) ps.d[r] = 0;
    } else {
      values_f16<NV>(kv.k_row(t0), kv.k_row_bytes, n, ahead, ps.f.data(), nullptr);
      if (n8 > n) std::memset(ps.f.data() + n * D, 0, sizeof(float) * static_cast<size_t>((n8 - n) * D));
    }
    for (int32_t h = 0; h < num_q; ++h) {
      float* sh = scores + h * s_stride + t0;
      const __m256 hs = _mm256_set1_ps(step_scale[h]);
      for (int64_t i = 0; i < n8; i += 8) {
        const __m256 s =
            codes ? _mm256_mul_ps(_mm256_cvtepi32_ps(dot8_codes<NV>(q16[h], ps.i.data() + i * D)),
                                  _mm256_mul_ps(_mm256_loadu_ps(ps.d.data() + i), hs))
                  : _mm256_mul_ps(dot8_rows(q + h * q_stride, ps.f.data() + i * D, D, D), vscale);
        store_scores(s, i, n, sh, &vmx[h]);
      }
    }
  }
  for (int32_t h = 0; h < num_q; ++h) mx[h] = max_lane(vmx[h]);
}

template <int NV>
void walk_pages(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx, float scale,
                float* scores, int64_t s_stride, float* out, int64_t o_stride) {
  constexpr int D = 8 * NV;
  const int32_t bs = kv.block_size, bs8 = (bs + 7) / 8 * 8;
  thread_local PageScratch ps;
  ps.f.resize(static_cast<size_t>(bs8) * D);
  ps.i.resize(static_cast<size_t>(bs8) * D);
  ps.d.resize(static_cast<size_t>(bs8));
  ps.w.resize(static_cast<size_t>(num_q) * bs);
  float mx[kMaxAttendGroup], inv[kMaxAttendGroup];
  score_pages<NV>(q, num_q, q_stride, kv, num_ctx, scale, ps, scores, s_stride, mx);
  for (int32_t h = 0; h < num_q; ++h) {
    inv[h] = 1.0f / exp_shifted(scores + h * s_stride, num_ctx, mx[h]);
    std::memset(out + h * o_stride, 0, sizeof(float) * D);
  }
  const ValuePageDecode<NV> dv = value_decoder<NV>(kv.value_dtype());
  const bool folded = kv.value_dtype() != KvDtype::F16;  // each row's scale goes into its probability
  for (int64_t t0 = 0; t0 < num_ctx; t0 += bs) {
    const int64_t n = std::min<int64_t>(bs, num_ctx - t0), ta = t0 + kAheadPages * bs;
    dv(kv.v_row(t0), kv.v_row_bytes, n, ta + bs <= num_ctx ? kv.v_row(ta) : nullptr, ps.f.data(), ps.d.data());
    if (!folded) {
      add_value_rows<NV>(ps.f.data(), D, n, scores + t0, s_stride, num_q, out, o_stride);
      continue;
    }
    for (int32_t h = 0; h < num_q; ++h) {
      for (int64_t r = 0; r < n; ++r) ps.w[h * bs + r] = scores[h * s_stride + t0 + r] * ps.d[r];
    }
    add_value_rows<NV>(ps.f.data(), D, n, ps.w.data(), bs, num_q, out, o_stride);
  }
  scale_rows(out, o_stride, num_q, D, inv);
}

bool page_dtype(KvDtype dt) {
  return dt == KvDtype::F16 || dt == KvDtype::Int8 || dt == KvDtype::Int4 || dt == KvDtype::Tq4;
}

}  // namespace

bool attend_group_pages_avx2(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx,
                             float scale, float* scores, int64_t s_stride, float* out, int64_t o_stride) {
  if (!kv.contiguous() || kv.num_bias_rows > 0 || kv.k_split != 0 || kv.k_dim != kv.v_dim || num_q > kMaxAttendGroup ||
      !page_dtype(kv.dtype) || !page_dtype(kv.value_dtype())) {
    return false;
  }
  switch (kv.k_dim) {
    case 64: walk_pages<8>(q, num_q, q_stride, kv, num_ctx, scale, scores, s_stride, out, o_stride); return true;
    case 128: walk_pages<16>(q, num_q, q_stride, kv, num_ctx, scale, scores, s_stride, out, o_stride); return true;
    default: return false;
  }
}

}  // namespace slimkv
