// AVX-512 attention over rows of integer codes (int8, int4, tq4, keys and values each in its own): keys are scored
// in integers — the query on the 12-bit grid (kv_codec.h) against each row's codes by VPDPWSSD (AVX-512 VNNI),
// 8 rows and two query heads at once, an exact integer sum scaled once; value rows are widened to floats with each
// row's scale folded into its probability; the query heads of a GQA group share each page read. Every other case
// goes to the AVX2 kernel. Scalar reference: cpu_scalar.cpp (decoded rows in float: equal to 1e-5, tested).
// GCC 12's own _mm512_reduce_* / cast intrinsics read an undefined register (__Y) on purpose and warn about it.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/cpu_avx2/simd_avx2.h"
#include "kernels/dot.h"
#include "kernels/kv_codec.h"

namespace slimkv {

extern const DotKernels kAvx2Dot;

namespace {

__m512 exp512_ps(__m512 x) {  // Cephes-style polynomial, as exp256_ps in cpu_avx2/attention_avx2.cpp
  const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.3762626647949f)), _mm512_set1_ps(-87.3365478515625f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

using simd::kv_row_scale;
using simd::reduce8_epi32;

// Remapped (gathered) rows are prefetched this many rows ahead of their use, every cache line a row touches (a
// 34-byte tq4 row straddles two lines half the time).
constexpr int64_t kGatherAhead = 32;
inline void prefetch_row(const uint8_t* r, int64_t bytes) {
  __builtin_prefetch(r, 0, 3);
  __builtin_prefetch(r + bytes - 1, 0, 3);
}

// How a row's codes are read. Keys: 64 values at a time as two vectors of 32 int16 codes, multiplied by the int16
// query (VPDPWSSD) laid out to match; values: int8 codes widened to floats, 16 at a time.
struct Int8Codes {  // one signed byte per value, natural order
  static void arrange(const int16_t* q16, int32_t kd, int16_t* dst) {
    std::memcpy(dst, q16, sizeof(int16_t) * static_cast<size_t>(kd));
  }
  __m512i key_chunk(const uint8_t* codes, int32_t j, int32_t kd, __m512i* second) const {  // values [j, j + 64)
    const int32_t n = std::min(64, kd - j);  // (plain loads where whole: masked ones missing L1 are slow on Zen 5)
    const __m512i z = n == 64 ? _mm512_loadu_si512(codes + j) : _mm512_maskz_loadu_epi8((1ull << n) - 1, codes + j);
    *second = _mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64(z, 1));
    return _mm512_cvtepi8_epi16(_mm512_castsi512_si256(z));
  }
  template <int NV>
  void values(const uint8_t* codes, __m512 (&v)[NV]) const {
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 16 * j));
      v[j] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
    }
  }
};

// Two values a byte, low nibble first; a nibble indexes a 16-entry table of int8 levels (int4: nibble - 8; tq4: its
// codebook). Keys: the 64 values of a chunk come as [the 32 even-indexed] and [the 32 odd-indexed], so the query
// is arranged the same way per 64 values.
template <bool kTq4>
struct NibbleCodes {
  static void arrange(const int16_t* q16, int32_t kd, int16_t* dst) {
    for (int32_t c = 0; c < kd; c += 64) {
      const int32_t n = std::min(64, kd - c);
      for (int32_t i = 0; i < n; ++i) dst[c + (i % 2) * 32 + i / 2] = q16[c + i];
    }
  }
  NibbleCodes()  // the 16 int8 levels in each 128-bit lane, loaded once per kernel call
      : table(_mm256_broadcastsi128_si256(
            kTq4 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(tq4_levels()))
                 : _mm_setr_epi8(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7))) {}
  __m256i table;
  static __m256i nibbles(const uint8_t* codes, int32_t j, int32_t kd, __m256i* hi) {  // values [j, j + 64)
    const int32_t n = std::min(32, (kd - j) / 2);
    const __m256i b = n == 32 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + j / 2))
                              : _mm256_maskz_loadu_epi8((1u << n) - 1, codes + j / 2);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    *hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), low4);
    return _mm256_and_si256(b, low4);
  }
  __m512i key_chunk(const uint8_t* codes, int32_t j, int32_t kd, __m512i* second) const {
    __m256i hi;
    const __m256i lo = nibbles(codes, j, kd, &hi);
    *second = _mm512_cvtepi8_epi16(_mm256_shuffle_epi8(table, hi));
    return _mm512_cvtepi8_epi16(_mm256_shuffle_epi8(table, lo));
  }
  template <int NV>
  void values(const uint8_t* codes, __m512 (&v)[NV]) const {
    for (int c = 0; c < (NV + 3) / 4; ++c) {  // 64 values a chunk: [e0-15 | e32-47] and [e16-31 | e48-63]
      __m256i hi;
      const __m256i lo = nibbles(codes, 64 * c, 16 * NV, &hi);
      const __m256i a = _mm256_shuffle_epi8(table, _mm256_unpacklo_epi8(lo, hi));
      const __m256i b = _mm256_shuffle_epi8(table, _mm256_unpackhi_epi8(lo, hi));
      const __m128i part[4] = {_mm256_castsi256_si128(a), _mm256_castsi256_si128(b), _mm256_extracti128_si256(a, 1),
                               _mm256_extracti128_si256(b, 1)};
#pragma GCC unroll 4
      for (int m = 0; m < 4; ++m) {
        if (4 * c + m < NV) v[4 * c + m] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(part[m]));
      }
    }
  }
};

// The query head on the integer grid (kv_codec.h) in the codec's layout: q16 [round_up(kd, 64)]; returns the grid
// step (max|q| / kQueryGridMax, as round_query_to_grid: for a query already on the grid the integers come back
// exactly).
template <class Codes>
float int_query(const float* q, int32_t kd, int16_t* q16) {
  float amax = 0;
  for (int32_t i = 0; i < kd; ++i) amax = std::max(amax, std::fabs(q[i]));
  alignas(64) int16_t plain[1024];
  const float id = amax > 0 ? static_cast<float>(kQueryGridMax) / amax : 0.0f;
  for (int32_t i = 0; i < kd; ++i) plain[i] = static_cast<int16_t>(std::nearbyint(q[i] * id));
  std::memset(q16, 0, sizeof(int16_t) * static_cast<size_t>((kd + 63) / 64 * 64));
  Codes::arrange(plain, kd, q16);
  return amax / static_cast<float>(kQueryGridMax);
}

inline __m256i fold_epi32(__m512i a) {
  return _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1));
}

struct IntQuery {  // one query head on the integer grid
  const int16_t* q16 = nullptr;  // [round_up(kd, 64)] in the codec's layout
  float step_scale = 0;          // grid step * softmax scale
};

// Scores of 8 rows (each an fp16 scale, then the codes; row[i]) for HQ query heads at once (each row's codes are
// unpacked once for all of them), into s[h][0..8). Each head's scores are the same whatever HQ.
template <class Codes, int HQ>
inline void score8(const Codes& codes, const IntQuery* q, const uint8_t* const* row, int32_t kd, float* const* s) {
  float rs[8];
  __m512i a[HQ][8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    rs[i] = kv_row_scale(row[i]);
#pragma GCC unroll 2
    for (int h = 0; h < HQ; ++h) a[h][i] = _mm512_setzero_si512();
  }
  for (int32_t j = 0; j < kd; j += 64) {
    __m512i qv[HQ][2];
#pragma GCC unroll 2
    for (int h = 0; h < HQ; ++h) {
      qv[h][0] = _mm512_load_si512(q[h].q16 + j);
      qv[h][1] = _mm512_load_si512(q[h].q16 + j + 32);
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      __m512i k1;
      const __m512i k0 = codes.key_chunk(row[i] + 2, j, kd, &k1);
#pragma GCC unroll 2
      for (int h = 0; h < HQ; ++h) {
        a[h][i] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(a[h][i], k0, qv[h][0]), k1, qv[h][1]);
      }
    }
  }
#pragma GCC unroll 2
  for (int h = 0; h < HQ; ++h) {
    alignas(32) float d[8];
    __m256i r[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      d[i] = rs[i] * q[h].step_scale;
      r[i] = fold_epi32(a[h][i]);
    }
    _mm256_storeu_ps(s[h], _mm256_mul_ps(_mm256_cvtepi32_ps(reduce8_epi32(r)), _mm256_load_ps(d)));
  }
}

// score8 for num_q heads, two at a time, into scores[h * s_stride + at ..].
template <class Codes>
inline void score_heads8(const Codes& codes, const IntQuery* iq, int32_t num_q, const uint8_t* const* rows, int32_t kd,
                         float* scores, int64_t s_stride, int64_t at) {
  int32_t h = 0;
  for (; h + 2 <= num_q; h += 2) {
    float* const s2[2] = {scores + h * s_stride + at, scores + (h + 1) * s_stride + at};
    score8<Codes, 2>(codes, iq + h, rows, kd, s2);
  }
  if (h < num_q) {
    float* const s1[1] = {scores + h * s_stride + at};
    score8<Codes, 1>(codes, iq + h, rows, kd, s1);
  }
}

template <class Codes>
inline float score1(const Codes& codes, const IntQuery& q, const uint8_t* row, int32_t kd) {
  __m512i a = _mm512_setzero_si512();
  for (int32_t j = 0; j < kd; j += 64) {
    __m512i k1;
    const __m512i k0 = codes.key_chunk(row + 2, j, kd, &k1);
    a = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(a, k0, _mm512_load_si512(q.q16 + j)), k1,
                            _mm512_load_si512(q.q16 + j + 32));
  }
  return static_cast<float>(_mm512_reduce_add_epi32(a)) * (kv_row_scale(row) * q.step_scale);
}

// Softmax numerators of one head's scores in place (summary biases first); returns their sum.
float softmax_numerators(float* scores, int64_t num_ctx, const PagedKv& kv) {
  for (int32_t i = 0; i < kv.num_bias_rows && i < num_ctx; ++i) scores[i] += kv.row_bias[i];
  __m512 vmx = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 16 <= num_ctx; i += 16) vmx = _mm512_max_ps(vmx, _mm512_loadu_ps(scores + i));
  float mx = _mm512_reduce_max_ps(vmx);
  for (; i < num_ctx; ++i) mx = std::max(mx, scores[i]);
  vmx = _mm512_set1_ps(mx);
  __m512 sum = _mm512_setzero_ps();
  for (i = 0; i + 16 <= num_ctx; i += 16) {
    const __m512 e = exp512_ps(_mm512_sub_ps(_mm512_loadu_ps(scores + i), vmx));
    _mm512_storeu_ps(scores + i, e);
    sum = _mm512_add_ps(sum, e);
  }
  float total = _mm512_reduce_add_ps(sum);
  for (; i < num_ctx; ++i) {
    scores[i] = std::exp(scores[i] - mx);
    total += scores[i];
  }
  return total;
}

// out[h] = inv[h] * sum_t p[h][t] * scale(row t) * V[t] for C heads at once: every value row is widened once and
// used by the C heads, whose accumulators stay in registers for the whole walk (each head's sum is a plain row
// walk's).
template <class Codes, int NV, int C>
void sum_values(const Codes& codes, const PagedKv& kv, int64_t num_ctx, bool paged, const float* p, int64_t p_stride,
                const float* inv, float* out, int64_t o_stride) {
  __m512 acc[C][NV];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) acc[c][j] = _mm512_setzero_ps();
  auto add_row = [&](const uint8_t* r, int64_t t) {
    __m512 vals[NV];
    codes.template values<NV>(r + 2, vals);
    const float d = kv_row_scale(r);
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const __m512 pv = _mm512_set1_ps(p[c * p_stride + t] * d);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[c][j] = _mm512_fmadd_ps(pv, vals[j], acc[c][j]);
    }
  };
  const int32_t bs = kv.block_size;
  int64_t t = 0;
  if (paged) {
    for (; t + bs <= num_ctx; t += bs) {
      kv.prefetch_v_page(t + kPrefetchPages * bs, num_ctx);
      const uint8_t* page = kv.v_row(t);
      for (int32_t k = 0; k < bs; ++k) add_row(page + k * kv.v_row_bytes, t + k);
    }
  }
  for (; t < num_ctx; ++t) {  // remapped rows: the one kGatherAhead on requested now
    if (!paged && t + kGatherAhead < num_ctx) prefetch_row(kv.v_row(t + kGatherAhead), kv.v_row_bytes);
    add_row(kv.v_row(t), t);
  }
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) {
    const __m512 vinv = _mm512_set1_ps(inv[c]);
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) _mm512_storeu_ps(out + c * o_stride + 16 * j, _mm512_mul_ps(acc[c][j], vinv));
  }
}

// num_q query heads sharing this KV head (GQA; 1 without it) over the same rows. Pages are walked in order, each
// K and V page read from memory once for the whole group; each head's result is the single-head walk's, bit for
// bit. NV × 16 = v_dim.
template <class KeyCodes, class ValueCodes, int NV>
void attend_codes(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx, float scale,
                  float* scores, int64_t s_stride, float* out, int64_t o_stride) {
  const int32_t kd = kv.k_dim, bs = kv.block_size;
  const KeyCodes kcodes;
  const ValueCodes vcodes;
  alignas(64) int16_t q16[kMaxAttendGroup][1024];  // [num_q, round_up(kd, 64)] the heads on the integer grid
  IntQuery iq[kMaxAttendGroup];
  for (int32_t h = 0; h < num_q; ++h) {
    iq[h].step_scale = int_query<KeyCodes>(q + h * q_stride, kd, q16[h]) * scale;
    iq[h].q16 = q16[h];
  }
  // Rows come page by page (one block-table lookup per page, rows contiguous within it, the page kPrefetchPages
  // ahead prefetched) unless a sparse window remaps them.
  const bool paged = kv.contiguous() && bs % 8 == 0;
  int64_t t = 0;
  if (paged) {
    for (; t + bs <= num_ctx; t += bs) {
      kv.prefetch_k_page(t + kPrefetchPages * bs, num_ctx);
      const uint8_t* page = kv.k_row(t);
      for (int32_t i = 0; i < bs; i += 8) {  // query heads two at a time, sharing each row's unpacked codes
        const uint8_t* rows[8];
        for (int k = 0; k < 8; ++k) rows[k] = page + (i + k) * kv.k_row_bytes;
        score_heads8(kcodes, iq, num_q, rows, kd, scores, s_stride, t + i);
      }
    }
  }
  for (; t + 8 <= num_ctx; t += 8) {  // remapped rows (a window, a select mode's choice): 8 gathered at a time
    const uint8_t* rows[8];
    for (int k = 0; k < 8; ++k) rows[k] = kv.k_row(t + k);
    for (int64_t k = t + kGatherAhead; k < std::min(num_ctx, t + kGatherAhead + 8); ++k) {
      prefetch_row(kv.k_row(k), kv.k_row_bytes);  // scattered rows: ask for the ones after next now
    }
    score_heads8(kcodes, iq, num_q, rows, kd, scores, s_stride, t);
  }
  for (; t < num_ctx; ++t) {
    const uint8_t* r = kv.k_row(t);
    for (int32_t h = 0; h < num_q; ++h) scores[h * s_stride + t] = score1(kcodes, iq[h], r, kd);
  }
  float inv[kMaxAttendGroup];
  for (int32_t h = 0; h < num_q; ++h) inv[h] = 1.0f / softmax_numerators(scores + h * s_stride, num_ctx, kv);
  // Values: heads in chunks whose accumulators fit the 32 registers beside the widened row.
  constexpr int kChunk = NV <= 4 ? 4 : 2;
  auto sum = [&](auto chunk, int32_t c0) {
    sum_values<ValueCodes, NV, decltype(chunk)::value>(vcodes, kv, num_ctx, paged, scores + c0 * s_stride, s_stride,
                                                       inv + c0, out + c0 * o_stride, o_stride);
  };
  int32_t c0 = 0;
  for (; c0 + kChunk <= num_q; c0 += kChunk) sum(std::integral_constant<int, kChunk>{}, c0);
  for (; c0 + 2 <= num_q; c0 += 2) sum(std::integral_constant<int, 2>{}, c0);
  for (; c0 < num_q; ++c0) sum(std::integral_constant<int, 1>{}, c0);
}

template <class KeyCodes, class ValueCodes>
bool attend_codes_by_value_size(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx,
                                float scale, float* scores, int64_t s_stride, float* out, int64_t o_stride) {
  switch (kv.v_dim) {
#define SLIMKV_CODES(NV) \
  attend_codes<KeyCodes, ValueCodes, NV>(q, num_q, q_stride, kv, num_ctx, scale, scores, s_stride, out, o_stride); \
  return true
    case 16: SLIMKV_CODES(1);
    case 32: SLIMKV_CODES(2);
    case 48: SLIMKV_CODES(3);
    case 64: SLIMKV_CODES(4);
    case 96: SLIMKV_CODES(6);
    case 128: SLIMKV_CODES(8);
#undef SLIMKV_CODES
    default: return false;
  }
}

// Scores of rows [begin, end) for num_q heads (scale x q.k on the integer grid), rows read through kv's table:
// groups of 8 where they lie in one page, single rows elsewhere.
template <class Codes>
void score_code_rows(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t begin, int64_t end,
                     float scale, float* scores, int64_t s_stride) {
  const Codes codes;
  const int32_t kd = kv.k_dim, bs = kv.block_size;
  alignas(64) int16_t q16[kMaxAttendGroup][1024];
  IntQuery iq[kMaxAttendGroup];
  for (int32_t h = 0; h < num_q; ++h) {
    iq[h].step_scale = int_query<Codes>(q + h * q_stride, kd, q16[h]) * scale;
    iq[h].q16 = q16[h];
  }
  const bool paged = kv.contiguous() && bs % 8 == 0;
  for (int64_t t = begin; t < end;) {
    if (t + 8 <= end && (!paged || t % 8 == 0)) {  // 8 rows: one page's run, or gathered
      const uint8_t* rows[8];
      const uint8_t* page = paged ? kv.k_row(t) : nullptr;
      for (int k = 0; k < 8; ++k) rows[k] = paged ? page + k * kv.k_row_bytes : kv.k_row(t + k);
      score_heads8(codes, iq, num_q, rows, kd, scores, s_stride, t);
      t += 8;
      continue;
    }
    const uint8_t* r = kv.k_row(t);
    for (int32_t h = 0; h < num_q; ++h) scores[h * s_stride + t] = score1(codes, iq[h], r, kd);
    ++t;
  }
}

}  // namespace

// Select mode's scores (row_select.h: the sketch over an index stream, or the oracle over the keys) for rows of
// integer codes in one part: false elsewhere (the caller's scalar reference then runs).
bool score_rows_avx512(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t begin, int64_t end,
                       float* scores, int64_t s_stride) {
  if (kv.k_split != 0 || kv.k_dim % 16 != 0 || kv.k_dim > 1024 || num_q < 1 || num_q > kMaxAttendGroup) return false;
  switch (kv.dtype) {
    case KvDtype::Int8: score_code_rows<Int8Codes>(q, num_q, q_stride, kv, begin, end, 1.0f, scores, s_stride); return true;
    case KvDtype::Int4: score_code_rows<NibbleCodes<false>>(q, num_q, q_stride, kv, begin, end, 1.0f, scores, s_stride); return true;
    case KvDtype::Tq4: score_code_rows<NibbleCodes<true>>(q, num_q, q_stride, kv, begin, end, 1.0f, scores, s_stride); return true;
    default: return false;
  }
}

void attend_group_avx512(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx,
                         float scale, float* scores, int64_t s_stride, float* out, int64_t o_stride) {
  if (kv.k_split == 0 && kv.k_dim % 16 == 0 && kv.k_dim <= 1024 && num_q <= kMaxAttendGroup) {
    auto run = [&](auto kc, auto vc) {
      return attend_codes_by_value_size<decltype(kc), decltype(vc)>(q, num_q, q_stride, kv, num_ctx, scale, scores,
                                                                    s_stride, out, o_stride);
    };
    auto with_values = [&](auto kc) {  // keys' codec chosen: the values' (asymmetric bits when they differ)
      switch (kv.value_dtype()) {
        case KvDtype::Int8: return run(kc, Int8Codes{});
        case KvDtype::Int4: return run(kc, NibbleCodes<false>{});
        case KvDtype::Tq4: return run(kc, NibbleCodes<true>{});
        default: return false;
      }
    };
    switch (kv.dtype) {
      case KvDtype::Int8: if (with_values(Int8Codes{})) return; break;
      case KvDtype::Int4: if (with_values(NibbleCodes<false>{})) return; break;
      case KvDtype::Tq4: if (with_values(NibbleCodes<true>{})) return; break;
      default: break;
    }
  }
  kAvx2Dot.attend_group(q, num_q, q_stride, kv, num_ctx, scale, scores, s_stride, out, o_stride);
}

void attend_avx512(const float* q, const PagedKv& kv, int64_t num_ctx, float scale, float* scores, float* out) {
  attend_group_avx512(q, 1, 0, kv, num_ctx, scale, scores, 0, out, 0);
}

}  // namespace slimkv
