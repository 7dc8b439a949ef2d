// AVX-512 attention over rows of integer codes (int8, int4, tq4: the compressed cache's common cases): keys are
// scored in integers — the query on the int8 grid (kv_codec.h) against each row's codes by VPDPBUSD, 8 rows at once,
// scaled once after the reduction; value rows are widened to floats with each row's scale folded into its
// probability; the query heads of a GQA group share each page read. Every other case goes to the AVX2 kernel.
// Scalar reference: cpu_scalar.cpp (the same scores: integer sums are exact).
// GCC 12's own _mm512_reduce_* / cast intrinsics read an undefined register (__Y) on purpose and warn about it.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
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

// How a row's codes are read. Keys: u8 operands for VPDPBUSD whose sum with the int8 query is the codes' dot plus
// kKeyBias * sum(query); values: int8 codes widened to floats, 16 at a time.
struct Int8Codes {  // one signed byte per value; u8 operand = code ^ 0x80 = code + 128
  static constexpr int32_t kKeyBias = 128;
  static int32_t key_bytes(int32_t values) { return values; }
  // q8's layout for this codec: natural order.
  static void arrange(const int8_t* q8, int32_t kd, int8_t* dst) { std::memcpy(dst, q8, static_cast<size_t>(kd)); }
  __m512i key_chunk(const uint8_t* codes, int32_t j, int32_t kd) const {  // values [j, j + 64)
    const int32_t n = std::min(64, kd - j);
    const __mmask64 m = n == 64 ? ~0ull : (1ull << n) - 1;
    return _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, codes + j), _mm512_set1_epi8(static_cast<char>(0x80)));
  }
  template <int NV>
  void values(const uint8_t* codes, __m512 (&v)[NV]) const {
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      v[j] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 16 * j))));
    }
  }
};

// Two values a byte, low nibble first; a nibble indexes a 16-entry table of int8 levels (int4: nibble - 8; tq4: its
// codebook). Keys: the nibbles of 64 values become [the 32 even-indexed | the 32 odd-indexed], so q8 is arranged
// the same way per 64 values.
template <bool kTq4>
struct NibbleCodes {
  static constexpr int32_t kKeyBias = kTq4 ? 128 : 8;  // u8 operand: tq4 level + 128 (by table); int4: the nibble
  static int32_t key_bytes(int32_t values) { return values / 2; }
  static void arrange(const int8_t* q8, int32_t kd, int8_t* dst) {
    for (int32_t c = 0; c < kd; c += 64) {
      const int32_t n = std::min(64, kd - c);
      for (int32_t i = 0; i < 64; ++i) dst[c + i] = 0;
      for (int32_t i = 0; i < n; ++i) dst[c + (i % 2) * 32 + i / 2] = q8[c + i];
    }
  }
  // The 16 int8 levels, loaded once per kernel call: in 128-bit lanes for values, as u8 key operands for keys.
  NibbleCodes() {
    const __m128i t = kTq4 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(tq4_levels()))
                           : _mm_setr_epi8(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    value_table = _mm256_broadcastsi128_si256(t);
    key_table = _mm512_broadcast_i32x4(_mm_add_epi8(t, _mm_set1_epi8(static_cast<char>(0x80))));
  }
  __m256i value_table;
  __m512i key_table;
  static __m256i nibbles(const uint8_t* codes, int32_t j, int32_t kd, __m256i* hi) {  // values [j, j + 64)
    const int32_t n = std::min(32, (kd - j) / 2);
    const __mmask32 m = n == 32 ? ~0u : (1u << n) - 1;
    const __m256i b = _mm256_maskz_loadu_epi8(m, codes + j / 2), low4 = _mm256_set1_epi8(0x0F);
    *hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), low4);
    return _mm256_and_si256(b, low4);
  }
  __m512i key_chunk(const uint8_t* codes, int32_t j, int32_t kd) const {
    __m256i hi;
    const __m256i lo = nibbles(codes, j, kd, &hi);
    const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    if constexpr (!kTq4) return z;
    return _mm512_shuffle_epi8(key_table, z);
  }
  template <int NV>
  void values(const uint8_t* codes, __m512 (&v)[NV]) const {
    const __m256i t = value_table;
    for (int c = 0; c < (NV + 3) / 4; ++c) {  // 64 values a chunk: [e0-15 | e32-47] and [e16-31 | e48-63]
      __m256i hi;
      const __m256i lo = nibbles(codes, 64 * c, 16 * NV, &hi);
      const __m256i a = _mm256_shuffle_epi8(t, _mm256_unpacklo_epi8(lo, hi));
      const __m256i b = _mm256_shuffle_epi8(t, _mm256_unpackhi_epi8(lo, hi));
      const __m128i part[4] = {_mm256_castsi256_si128(a), _mm256_castsi256_si128(b), _mm256_extracti128_si256(a, 1),
                               _mm256_extracti128_si256(b, 1)};
#pragma GCC unroll 4
      for (int m = 0; m < 4; ++m) {
        if (4 * c + m < NV) v[4 * c + m] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(part[m]));
      }
    }
  }
};

// The query head on the int8 grid in the codec's layout: q8 [round_up(kd, 64)], returns the grid step (max|q| /
// 127, as round_query_to_int8_grid: for a query already on the grid the integers are recovered exactly) and sets
// *sum to the sum of the integers.
template <class Codes>
float int8_query(const float* q, int32_t kd, int8_t* q8, int32_t* sum) {
  float amax = 0;
  for (int32_t i = 0; i < kd; ++i) amax = std::max(amax, std::fabs(q[i]));
  alignas(64) int8_t plain[1024];
  const float id = amax > 0 ? 127.0f / amax : 0.0f;
  *sum = 0;
  for (int32_t i = 0; i < kd; ++i) {
    plain[i] = static_cast<int8_t>(std::nearbyint(q[i] * id));
    *sum += plain[i];
  }
  std::memset(q8, 0, static_cast<size_t>((kd + 63) / 64 * 64));
  Codes::arrange(plain, kd, q8);
  return amax / 127.0f;
}

inline __m256i fold_epi32(__m512i a) {
  return _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1));
}

// Lane i = the sum of a[i]'s 8 lanes (integers: exact in any order).
inline __m256i reduce8_epi32(const __m256i a[8]) {
  const __m256i s01 = _mm256_hadd_epi32(a[0], a[1]), s23 = _mm256_hadd_epi32(a[2], a[3]);
  const __m256i s45 = _mm256_hadd_epi32(a[4], a[5]), s67 = _mm256_hadd_epi32(a[6], a[7]);
  const __m256i s0123 = _mm256_hadd_epi32(s01, s23), s4567 = _mm256_hadd_epi32(s45, s67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(s0123, s4567, 0x20), _mm256_permute2x128_si256(s0123, s4567, 0x31));
}

struct IntQuery {  // one query head on the int8 grid
  const int8_t* q8 = nullptr;  // [round_up(kd, 64)] in the codec's layout
  int32_t bias = 0;            // kKeyBias * sum(q8): what the u8 operands add to each row's integer dot
  float step_scale = 0;        // grid step * softmax scale
};

// Scores of 8 rows `stride` bytes apart (an fp16 scale, then the codes) into s[0..8).
template <class Codes>
inline void score8(const Codes& codes, const IntQuery& q, const uint8_t* row, int64_t stride, int32_t kd, float* s) {
  alignas(32) float d[8];
  __m512i a[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    a[i] = _mm512_setzero_si512();
    d[i] = kv_row_scale(row + i * stride) * q.step_scale;
  }
  for (int32_t j = 0; j < kd; j += 64) {
    const __m512i qv = _mm512_load_si512(q.q8 + j);
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) a[i] = _mm512_dpbusd_epi32(a[i], codes.key_chunk(row + i * stride + 2, j, kd), qv);
  }
  __m256i h[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) h[i] = fold_epi32(a[i]);
  const __m256i dots = _mm256_sub_epi32(reduce8_epi32(h), _mm256_set1_epi32(q.bias));
  _mm256_storeu_ps(s, _mm256_mul_ps(_mm256_cvtepi32_ps(dots), _mm256_load_ps(d)));
}

template <class Codes>
inline float score1(const Codes& codes, const IntQuery& q, const uint8_t* row, int32_t kd) {
  __m512i a = _mm512_setzero_si512();
  for (int32_t j = 0; j < kd; j += 64) {
    a = _mm512_dpbusd_epi32(a, codes.key_chunk(row + 2, j, kd), _mm512_load_si512(q.q8 + j));
  }
  return static_cast<float>(_mm512_reduce_add_epi32(a) - q.bias) * (kv_row_scale(row) * q.step_scale);
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
void sum_values(const Codes& codes, const PagedKv& kv, int64_t num_ctx, bool paged, const float* p, int64_t p_stride, const float* inv,
                float* out, int64_t o_stride) {
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
  for (; t < num_ctx; ++t) add_row(kv.v_row(t), t);
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
template <class Codes, int NV>
void attend_codes(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx, float scale,
                  float* scores, int64_t s_stride, float* out, int64_t o_stride) {
  const int32_t kd = kv.k_dim, bs = kv.block_size;
  const Codes codes;
  alignas(64) int8_t q8[kMaxAttendGroup][1024];  // [num_q, round_up(kd, 64)] the heads on the int8 grid
  IntQuery iq[kMaxAttendGroup];
  for (int32_t h = 0; h < num_q; ++h) {
    int32_t sum = 0;
    iq[h].step_scale = int8_query<Codes>(q + h * q_stride, kd, q8[h], &sum) * scale;
    iq[h].q8 = q8[h];
    iq[h].bias = Codes::kKeyBias * sum;
  }
  // Rows come page by page (one block-table lookup per page, rows contiguous within it, the page kPrefetchPages
  // ahead prefetched) unless a sparse window remaps them.
  const bool paged = kv.sink_tokens == 0 && kv.window_begin == 0 && bs % 8 == 0;
  int64_t t = 0;
  if (paged) {
    for (; t + bs <= num_ctx; t += bs) {
      kv.prefetch_k_page(t + kPrefetchPages * bs, num_ctx);
      const uint8_t* page = kv.k_row(t);
      for (int32_t h = 0; h < num_q; ++h) {
        for (int32_t i = 0; i < bs; i += 8) {
          score8(codes, iq[h], page + i * kv.k_row_bytes, kv.k_row_bytes, kd, scores + h * s_stride + t + i);
        }
      }
    }
  }
  for (; t < num_ctx; ++t) {
    const uint8_t* r = kv.k_row(t);
    for (int32_t h = 0; h < num_q; ++h) scores[h * s_stride + t] = score1(codes, iq[h], r, kd);
  }
  float inv[kMaxAttendGroup];
  for (int32_t h = 0; h < num_q; ++h) inv[h] = 1.0f / softmax_numerators(scores + h * s_stride, num_ctx, kv);
  // Values: heads in chunks whose accumulators fit the 32 registers beside the widened row.
  constexpr int kChunk = NV <= 4 ? 4 : 2;
  auto sum = [&](auto chunk, int32_t c0) {
    sum_values<Codes, NV, decltype(chunk)::value>(codes, kv, num_ctx, paged, scores + c0 * s_stride, s_stride, inv + c0,
                                                  out + c0 * o_stride, o_stride);
  };
  int32_t c0 = 0;
  for (; c0 + kChunk <= num_q; c0 += kChunk) sum(std::integral_constant<int, kChunk>{}, c0);
  for (; c0 + 2 <= num_q; c0 += 2) sum(std::integral_constant<int, 2>{}, c0);
  for (; c0 < num_q; ++c0) sum(std::integral_constant<int, 1>{}, c0);
}

template <class Codes>
bool attend_codes_by_value_size(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx,
                                float scale, float* scores, int64_t s_stride, float* out, int64_t o_stride) {
  switch (kv.v_dim) {
#define SLIMKV_CODES(NV) \
  attend_codes<Codes, NV>(q, num_q, q_stride, kv, num_ctx, scale, scores, s_stride, out, o_stride); \
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

}  // namespace

void attend_group_avx512(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx,
                         float scale, float* scores, int64_t s_stride, float* out, int64_t o_stride) {
  if (kv.k_split == 0 && kv.k_dim % 16 == 0 && kv.k_dim <= 1024 && num_q <= kMaxAttendGroup) {
    auto run = [&](auto codes) {
      return attend_codes_by_value_size<decltype(codes)>(q, num_q, q_stride, kv, num_ctx, scale, scores, s_stride,
                                                         out, o_stride);
    };
    if (kv.dtype == KvDtype::Int8 && run(Int8Codes{})) return;
    if (kv.dtype == KvDtype::Int4 && run(NibbleCodes<false>{})) return;
    if (kv.dtype == KvDtype::Tq4 && run(NibbleCodes<true>{})) return;
  }
  kAvx2Dot.attend_group(q, num_q, q_stride, kv, num_ctx, scale, scores, s_stride, out, o_stride);
}

void attend_avx512(const float* q, const PagedKv& kv, int64_t num_ctx, float scale, float* scores, float* out) {
  attend_group_avx512(q, 1, 0, kv, num_ctx, scale, scores, 0, out, 0);
}

}  // namespace slimkv
