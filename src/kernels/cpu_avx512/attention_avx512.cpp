// AVX-512 attention over int8 rows (the compressed cache's common case): key rows are widened 16 values at a time,
// dotted with q 8 rows at once and scaled once after the reduction; each value row's scale is folded into its
// probability; the query heads of a GQA group share each page read. Every other case goes to the AVX2 kernel.
// Scalar reference: cpu_scalar.cpp.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/cpu_avx2/simd_avx2.h"
#include "kernels/dot.h"

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

inline __m512 int8x16(const uint8_t* p) {  // 16 int8 values -> 16 floats
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

using simd::kv_row_scale;

inline __m256 fold(__m512 a) { return _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1)); }

// Scores of 8 rows `stride` bytes apart (scale, then kd int8 values each), times `scale`, into s[0..8).
inline void score8(const float* q, const uint8_t* row, int64_t stride, int32_t kd, float scale, float* s) {
  alignas(32) float d[8];
  __m512 a[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    a[i] = _mm512_setzero_ps();
    d[i] = kv_row_scale(row + i * stride) * scale;
  }
  for (int32_t j = 0; j < kd; j += 16) {
    const __m512 qv = _mm512_loadu_ps(q + j);
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) a[i] = _mm512_fmadd_ps(int8x16(row + i * stride + 2 + j), qv, a[i]);
  }
  __m256 h[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) h[i] = fold(a[i]);
  _mm256_storeu_ps(s, _mm256_mul_ps(simd::reduce8(h), _mm256_load_ps(d)));
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
template <int NV, int C>
void sum_values(const PagedKv& kv, int64_t num_ctx, bool paged, const float* p, int64_t p_stride, const float* inv,
                float* out, int64_t o_stride) {
  __m512 acc[C][NV];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) acc[c][j] = _mm512_setzero_ps();
  auto add_row = [&](const uint8_t* r, int64_t t) {
    __m512 vals[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) vals[j] = int8x16(r + 2 + 16 * j);
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
template <int NV>
void attend_int8(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx, float scale,
                 float* scores, int64_t s_stride, float* out, int64_t o_stride) {
  const int32_t kd = kv.k_dim, bs = kv.block_size;
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
          score8(q + h * q_stride, page + i * kv.k_row_bytes, kv.k_row_bytes, kd, scale, scores + h * s_stride + t + i);
        }
      }
    }
  }
  for (; t < num_ctx; ++t) {
    const uint8_t* r = kv.k_row(t);
    for (int32_t h = 0; h < num_q; ++h) {
      __m512 a = _mm512_setzero_ps();
      for (int32_t j = 0; j < kd; j += 16) a = _mm512_fmadd_ps(int8x16(r + 2 + j), _mm512_loadu_ps(q + h * q_stride + j), a);
      scores[h * s_stride + t] = _mm512_reduce_add_ps(a) * kv_row_scale(r) * scale;
    }
  }
  float inv[kMaxAttendGroup];
  for (int32_t h = 0; h < num_q; ++h) inv[h] = 1.0f / softmax_numerators(scores + h * s_stride, num_ctx, kv);
  // Values: heads in chunks whose accumulators fit the 32 registers beside the widened row.
  constexpr int kChunk = NV <= 4 ? 4 : 2;
  auto sum = [&](auto chunk, int32_t c0) {
    sum_values<NV, decltype(chunk)::value>(kv, num_ctx, paged, scores + c0 * s_stride, s_stride, inv + c0,
                                           out + c0 * o_stride, o_stride);
  };
  int32_t c0 = 0;
  for (; c0 + kChunk <= num_q; c0 += kChunk) sum(std::integral_constant<int, kChunk>{}, c0);
  for (; c0 + 2 <= num_q; c0 += 2) sum(std::integral_constant<int, 2>{}, c0);
  for (; c0 < num_q; ++c0) sum(std::integral_constant<int, 1>{}, c0);
}

}  // namespace

void attend_group_avx512(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx,
                         float scale, float* scores, int64_t s_stride, float* out, int64_t o_stride) {
  if (kv.dtype == KvDtype::Int8 && kv.k_split == 0 && kv.k_dim % 16 == 0 && kv.k_dim <= 1024 && num_q <= kMaxAttendGroup) {
    switch (kv.v_dim) {
#define SLIMKV_INT8(NV) return attend_int8<NV>(q, num_q, q_stride, kv, num_ctx, scale, scores, s_stride, out, o_stride)
      case 16: SLIMKV_INT8(1);
      case 32: SLIMKV_INT8(2);
      case 48: SLIMKV_INT8(3);
      case 64: SLIMKV_INT8(4);
      case 96: SLIMKV_INT8(6);
      case 128: SLIMKV_INT8(8);
#undef SLIMKV_INT8
      default: break;
    }
  }
  kAvx2Dot.attend_group(q, num_q, q_stride, kv, num_ctx, scale, scores, s_stride, out, o_stride);
}

void attend_avx512(const float* q, const PagedKv& kv, int64_t num_ctx, float scale, float* scores, float* out) {
  attend_group_avx512(q, 1, 0, kv, num_ctx, scale, scores, 0, out, 0);
}

}  // namespace slimkv
