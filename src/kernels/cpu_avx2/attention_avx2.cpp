// AVX2 attention of one query head over contiguous cached rows, with a vectorised exp (Cephes-style
// polynomial, ~1 ulp) so softmax does not dominate for small head dims. Scalar reference: cpu_scalar.cpp.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu_avx2/attention_blocks_avx2.h"
#include "kernels/cpu_avx2/decode_avx2.h"
#include "kernels/cpu_avx2/simd_avx2.h"
#include "kernels/dot.h"
#include "kernels/kv_codec.h"

namespace slimkv {

bool attend_group_pages_avx2(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx,
                             float scale, float* scores, int64_t s_stride, float* out, int64_t o_stride);

__m256 exp256_ps(__m256 x) {
  const __m256 log2e = _mm256_set1_ps(1.44269504088896341f);
  const __m256 ln2_hi = _mm256_set1_ps(0.693359375f), ln2_lo = _mm256_set1_ps(-2.12194440e-4f);
  x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f)), _mm256_set1_ps(-87.3365478515625f));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, ln2_hi, x);
  r = _mm256_fnmadd_ps(n, ln2_lo, r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

namespace {

using simd::add_value_rows;
using simd::decode_key;
using simd::dot8_rows;
using simd::exp_shifted;
using simd::scale_rows;
using simd::decode_row;
using simd::hsum;
using simd::kv_row_scale;
using simd::reduce8;

inline float dot(const float* a, const float* b, int32_t n) {
  __m256 acc = _mm256_setzero_ps();
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  float s = hsum(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// out[h] = inv[h] * sum_t p[h][t] * V[t] for the heads of a group, page by page (each V page read once).
template <int NV>
void accumulate_v(const PagedKv& kv, const float* p, int64_t p_stride, int32_t num_q, int64_t num_ctx,
                  const float* inv, float* out, int64_t o_stride) {
  for (int32_t h = 0; h < num_q; ++h) {
    for (int j = 0; j < NV; ++j) _mm256_storeu_ps(out + h * o_stride + 8 * j, _mm256_setzero_ps());
  }
  for (int64_t t0 = 0; t0 < num_ctx; t0 += kv.block_size) {
    kv.prefetch_v_page(t0 + kPrefetchPages * kv.block_size, num_ctx);
    add_value_rows<NV>(kv.v_row_f32(t0), kv.v_row_bytes / 4, std::min<int64_t>(kv.block_size, num_ctx - t0), p + t0,
                       p_stride, num_q, out, o_stride);
  }
  for (int32_t h = 0; h < num_q; ++h) {
    const __m256 vinv = _mm256_set1_ps(inv[h]);
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      _mm256_storeu_ps(out + h * o_stride + 8 * j, _mm256_mul_ps(_mm256_loadu_ps(out + h * o_stride + 8 * j), vinv));
    }
  }
}

// accumulate_v for value rows wider than the register budget (v_dim % 128 == 0, e.g. MLA's 512-value latents):
// page by page, 128 columns at a time, each head's 16 accumulators in registers for a page's rows.
void accumulate_v_wide(const PagedKv& kv, const float* p, int64_t p_stride, int32_t num_q, int64_t num_ctx,
                       const float* inv, float* out, int64_t o_stride) {
  const int32_t vd = kv.v_dim;
  for (int32_t h = 0; h < num_q; ++h) std::memset(out + h * o_stride, 0, sizeof(float) * vd);
  for (int64_t t0 = 0; t0 < num_ctx; t0 += kv.block_size) {
    kv.prefetch_v_page(t0 + kPrefetchPages * kv.block_size, num_ctx);
    const int64_t n = std::min<int64_t>(kv.block_size, num_ctx - t0);
    for (int32_t c = 0; c < vd; c += 128) {
      add_value_rows<16>(kv.v_row_f32(t0) + c, kv.v_row_bytes / 4, n, p + t0, p_stride, num_q, out + c, o_stride);
    }
  }
  scale_rows(out, o_stride, num_q, vd, inv);
}

// Quantized / f16 rows (or a sparse row set): keys decoded 8 rows at a time and scored with one transpose-reduce;
// values decoded row by row into register accumulators (NV × 8 = v_dim; NV = 0: any v_dim, through memory).
template <int NV>
void attend_decoded(const float* q, const PagedKv& kv, int64_t num_ctx, float scale, float* scores, float* out) {
  alignas(32) float rows[8 * 1024];  // [8, k_dim] decoded keys, or one decoded value row
  const int32_t kd = kv.k_dim, vd = kv.v_dim;
  float mx = -INFINITY;
  int64_t t = 0;
  for (; t + 8 <= num_ctx; t += 8) {
    for (int i = 0; i < 8; ++i) decode_key(kv, kv.k_row(t + i), rows + i * kd);
    _mm256_storeu_ps(scores + t, _mm256_mul_ps(dot8_rows(q, rows, kd, kd), _mm256_set1_ps(scale)));
    for (int i = 0; i < 8; ++i) {
      if (t + i < kv.num_bias_rows) scores[t + i] += kv.row_bias[t + i];
      mx = std::max(mx, scores[t + i]);
    }
  }
  for (; t < num_ctx; ++t) {
    decode_key(kv, kv.k_row(t), rows);
    scores[t] = dot(q, rows, kd) * scale + (t < kv.num_bias_rows ? kv.row_bias[t] : 0.0f);
    mx = std::max(mx, scores[t]);
  }
  const float inv = 1.0f / exp_shifted(scores, num_ctx, mx);
  if constexpr (NV > 0) {
    __m256 acc[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t r = 0; r < num_ctx; ++r) {
      decode_row(kv.v_row(r), vd, kv.value_dtype(), rows);
      const __m256 p = _mm256_set1_ps(scores[r]);
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) acc[j] = _mm256_fmadd_ps(p, _mm256_load_ps(rows + 8 * j), acc[j]);
    }
    const __m256 vinv = _mm256_set1_ps(inv);
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) _mm256_storeu_ps(out + 8 * j, _mm256_mul_ps(acc[j], vinv));
  } else {
    for (int32_t j = 0; j < vd; j += 8) _mm256_storeu_ps(out + j, _mm256_setzero_ps());
    for (int64_t r = 0; r < num_ctx; ++r) {
      decode_row(kv.v_row(r), vd, kv.value_dtype(), rows);
      const __m256 p = _mm256_set1_ps(scores[r] * inv);
      for (int32_t j = 0; j < vd; j += 8) {
        _mm256_storeu_ps(out + j, _mm256_fmadd_ps(p, _mm256_loadu_ps(rows + j), _mm256_loadu_ps(out + j)));
      }
    }
  }
}

inline __m256 int8x8(const uint8_t* p) {  // 8 int8 values -> 8 floats
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// Int8 rows without a decode pass: 8 key rows are dotted with q straight from their bytes and scaled once after the
// reduction; each value row's scale is folded into its probability. NV × 8 = v_dim.
template <int NV>
void attend_int8(const float* q, const PagedKv& kv, int64_t num_ctx, float scale, float* scores, float* out) {
  const int32_t kd = kv.k_dim;
  float mx = -INFINITY;
  int64_t t = 0;
  alignas(32) float d[8];
  for (; t + 8 <= num_ctx; t += 8) {
    const uint8_t* r[8];
    for (int i = 0; i < 8; ++i) {
      r[i] = kv.k_row(t + i);
      d[i] = kv_row_scale(r[i]) * scale;
      r[i] += 2;
    }
    __m256 a[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) a[i] = _mm256_setzero_ps();
    for (int32_t j = 0; j < kd; j += 8) {
      const __m256 qv = _mm256_loadu_ps(q + j);
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) a[i] = _mm256_fmadd_ps(int8x8(r[i] + j), qv, a[i]);
    }
    _mm256_storeu_ps(scores + t, _mm256_mul_ps(reduce8(a), _mm256_load_ps(d)));
    for (int i = 0; i < 8; ++i) {
      if (t + i < kv.num_bias_rows) scores[t + i] += kv.row_bias[t + i];
      mx = std::max(mx, scores[t + i]);
    }
  }
  for (; t < num_ctx; ++t) {
    const uint8_t* r = kv.k_row(t);
    __m256 a = _mm256_setzero_ps();
    for (int32_t j = 0; j < kd; j += 8) a = _mm256_fmadd_ps(int8x8(r + 2 + j), _mm256_loadu_ps(q + j), a);
    scores[t] = hsum(a) * kv_row_scale(r) * scale + (t < kv.num_bias_rows ? kv.row_bias[t] : 0.0f);
    mx = std::max(mx, scores[t]);
  }
  const float inv = 1.0f / exp_shifted(scores, num_ctx, mx);
  __m256 acc[NV];
#pragma GCC unroll 16
  for (int j = 0; j < NV; ++j) acc[j] = _mm256_setzero_ps();
  for (int64_t i = 0; i < num_ctx; ++i) {
    const uint8_t* r = kv.v_row(i);
    const __m256 p = _mm256_set1_ps(scores[i] * kv_row_scale(r));
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) acc[j] = _mm256_fmadd_ps(p, int8x8(r + 2 + 8 * j), acc[j]);
  }
  const __m256 vinv = _mm256_set1_ps(inv);
#pragma GCC unroll 16
  for (int j = 0; j < NV; ++j) _mm256_storeu_ps(out + 8 * j, _mm256_mul_ps(acc[j], vinv));
}

// Calls Kernel<NV> with NV × 8 = v_dim for the common value sizes (register accumulators); false otherwise.
template <template <int> class Kernel>
bool by_value_size(const float* q, const PagedKv& kv, int64_t num_ctx, float scale, float* scores, float* out) {
  switch (kv.v_dim) {
    case 8: Kernel<1>::run(q, kv, num_ctx, scale, scores, out); return true;
    case 16: Kernel<2>::run(q, kv, num_ctx, scale, scores, out); return true;
    case 24: Kernel<3>::run(q, kv, num_ctx, scale, scores, out); return true;
    case 32: Kernel<4>::run(q, kv, num_ctx, scale, scores, out); return true;
    case 48: Kernel<6>::run(q, kv, num_ctx, scale, scores, out); return true;
    case 64: Kernel<8>::run(q, kv, num_ctx, scale, scores, out); return true;
    case 96: Kernel<12>::run(q, kv, num_ctx, scale, scores, out); return true;
    case 128: Kernel<16>::run(q, kv, num_ctx, scale, scores, out); return true;
    default: return false;
  }
}
template <int NV> struct Int8Kernel { static constexpr auto run = attend_int8<NV>; };
template <int NV> struct DecodedKernel { static constexpr auto run = attend_decoded<NV>; };

void attend_decoded_any(const float* q, const PagedKv& kv, int64_t num_ctx, float scale, float* scores, float* out) {
  if (kv.dtype == KvDtype::Int8 && kv.value_dtype() == KvDtype::Int8 && kv.k_split == 0 &&
      by_value_size<Int8Kernel>(q, kv, num_ctx, scale, scores, out)) {
    return;
  }
  if (by_value_size<DecodedKernel>(q, kv, num_ctx, scale, scores, out)) return;
  attend_decoded<0>(q, kv, num_ctx, scale, scores, out);
}

}  // namespace

// Walks the sequence page by page: within a page rows are contiguous (k_row_bytes apart). f32 rows: the query
// heads of a GQA group share each page read (K and V); other layouts go head by head through the decoding kernels.
// f16 / int8 / int4 rows of a GQA group (or with values wider than the keys' registers: MLA's 576-value records,
// 512-value latents): each page is decoded once into a scratch page and scored for every head of the group; the
// values likewise, 128 (or 64) columns at a time.
void attend_group_decoded_wide(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx,
                               float scale, float* scores, int64_t s_stride, float* out, int64_t o_stride) {
  const int32_t kd = kv.k_dim, vd = kv.v_dim, bs = kv.block_size;
  thread_local std::vector<float> page;  // [round_up(bs, 8), max(kd, vd)] decoded rows (8-row groups scored at once)
  page.resize(static_cast<size_t>((bs + 7) / 8 * 8) * std::max(kd, vd));
  float mx[kMaxAttendGroup], tmp[8];
  for (int32_t h = 0; h < num_q; ++h) mx[h] = -INFINITY;
  for (int64_t t0 = 0; t0 < num_ctx; t0 += bs) {
    const int64_t n = std::min<int64_t>(bs, num_ctx - t0);
    kv.prefetch_k_page(t0 + kPrefetchPages * bs, num_ctx);
    for (int64_t i = 0; i < n; ++i) decode_key(kv, kv.k_row(t0 + i), page.data() + i * kd);
    for (int64_t i = n; i < (n + 7) / 8 * 8; ++i) std::memset(page.data() + i * kd, 0, sizeof(float) * kd);
    for (int32_t h = 0; h < num_q; ++h) {
      float* sh = scores + h * s_stride;
      for (int64_t i = 0; i < n; i += 8) {
        _mm256_storeu_ps(tmp, _mm256_mul_ps(dot8_rows(q + h * q_stride, page.data() + i * kd, kd, kd),
                                            _mm256_set1_ps(scale)));
        for (int64_t j = 0; j < 8 && i + j < n; ++j) {
          sh[t0 + i + j] = tmp[j];
          mx[h] = std::max(mx[h], tmp[j]);
        }
      }
    }
  }
  float inv[kMaxAttendGroup];
  for (int32_t h = 0; h < num_q; ++h) {
    inv[h] = 1.0f / exp_shifted(scores + h * s_stride, num_ctx, mx[h]);
    std::memset(out + h * o_stride, 0, sizeof(float) * vd);
  }
  for (int64_t t0 = 0; t0 < num_ctx; t0 += bs) {
    const int64_t n = std::min<int64_t>(bs, num_ctx - t0);
    kv.prefetch_v_page(t0 + kPrefetchPages * bs, num_ctx);
    for (int64_t i = 0; i < n; ++i) decode_row(kv.v_row(t0 + i), vd, kv.value_dtype(), page.data() + i * vd);
    if (vd % 128 == 0) {
      for (int32_t c = 0; c < vd; c += 128) {
        add_value_rows<16>(page.data() + c, vd, n, scores + t0, s_stride, num_q, out + c, o_stride);
      }
    } else {  // 64-column chunks (vd % 64 == 0: the caller's condition)
      for (int32_t c = 0; c < vd; c += 64) {
        add_value_rows<8>(page.data() + c, vd, n, scores + t0, s_stride, num_q, out + c, o_stride);
      }
    }
  }
  scale_rows(out, o_stride, num_q, vd, inv);
}

void attend_group_avx2(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx,
                       float scale, float* scores, int64_t s_stride, float* out, int64_t o_stride) {
  // The common decode walk (f16 / int8 / int4 / tq4 rows of 64 or 128 values in order): attention_pages_avx2.cpp.
  if (attend_group_pages_avx2(q, num_q, q_stride, kv, num_ctx, scale, scores, s_stride, out, o_stride)) return;
  const bool vec8 = kv.k_dim % 8 == 0 && kv.v_dim % 8 == 0 && kv.k_split % 8 == 0 && kv.k_dim <= 1024 &&
                    kv.v_dim <= 1024;
  // f16 / int8 / int4 rows, low-rank latents, or a sparse (sinks + window) row set: one head, one row at a time.
  // (Keys and values of different sizes share the group walk when the values are whole 128-column chunks: MLA.)
  const bool wide_v = kv.k_dim != kv.v_dim && kv.v_dim % 128 == 0 && kv.k_dim % 8 == 0;
  const bool all_f32 = kv.dtype == KvDtype::F32 && kv.value_dtype() == KvDtype::F32;
  // A GQA group over decoded pages: each page decoded once for all its heads — wide values (groups of 2 or more),
  // or whole 64-column rows (any group, a single head too: grouped == single, bit for bit).
  const bool rows64 = kv.k_dim == kv.v_dim && kv.k_dim % 64 == 0 && kv.k_split % 8 == 0;
  if ((rows64 || (wide_v && num_q > 1)) && !all_f32 && kv.contiguous() &&
      kv.num_bias_rows == 0 && num_q <= kMaxAttendGroup && kv.k_dim <= 1024 && kv.v_dim <= 1024) {
    return attend_group_decoded_wide(q, num_q, q_stride, kv, num_ctx, scale, scores, s_stride, out, o_stride);
  }
  if (!all_f32 || (kv.k_dim != kv.v_dim && !wide_v) || !kv.contiguous() ||
      kv.num_bias_rows > 0 || num_q > kMaxAttendGroup) {
    for (int32_t h = 0; h < num_q; ++h) {
      float* sh = scores + h * s_stride;
      float* oh = out + h * o_stride;
      if (vec8) attend_decoded_any(q + h * q_stride, kv, num_ctx, scale, sh, oh);
      else kScalarDot.attend(q + h * q_stride, kv, num_ctx, scale, sh, oh);
    }
    return;
  }
  const int32_t head_dim = kv.k_dim;
  const int32_t bs = kv.block_size;
  const int64_t row_floats = kv.k_row_bytes / 4;
  float mx[kMaxAttendGroup];
  for (int32_t h = 0; h < num_q; ++h) mx[h] = -INFINITY;
  const bool by8 = bs % 8 == 0 && head_dim % 8 == 0;  // pages hold whole groups of 8 rows
  float tmp[8];
  for (int64_t t0 = 0; t0 < num_ctx; t0 += bs) {
    kv.prefetch_k_page(t0 + kPrefetchPages * bs, num_ctx);
    const float* k = kv.k_row_f32(t0);
    const int64_t n = std::min<int64_t>(bs, num_ctx - t0);
    for (int32_t h = 0; h < num_q; ++h) {
      const float* qh = q + h * q_stride;
      float* sh = scores + h * s_stride;
      if (by8) {
        for (int64_t i = 0; i < n; i += 8) {  // rows past n exist in the page; their scores are dropped
          _mm256_storeu_ps(tmp, _mm256_mul_ps(dot8_rows(qh, k + i * row_floats, row_floats, head_dim),
                                              _mm256_set1_ps(scale)));
          for (int64_t j = 0; j < 8 && i + j < n; ++j) {
            sh[t0 + i + j] = tmp[j];
            mx[h] = std::max(mx[h], tmp[j]);
          }
        }
        continue;
      }
      for (int64_t i = 0; i < n; ++i) {
        float s = dot(qh, k + i * row_floats, head_dim) * scale;
        sh[t0 + i] = s;
        mx[h] = std::max(mx[h], s);
      }
    }
  }
  float inv[kMaxAttendGroup];
  for (int32_t h = 0; h < num_q; ++h) inv[h] = 1.0f / exp_shifted(scores + h * s_stride, num_ctx, mx[h]);
  if (wide_v) return accumulate_v_wide(kv, scores, s_stride, num_q, num_ctx, inv, out, o_stride);
  switch (head_dim) {  // accumulate in registers for the common head sizes
    case 8: return accumulate_v<1>(kv, scores, s_stride, num_q, num_ctx, inv, out, o_stride);
    case 16: return accumulate_v<2>(kv, scores, s_stride, num_q, num_ctx, inv, out, o_stride);
    case 24: return accumulate_v<3>(kv, scores, s_stride, num_q, num_ctx, inv, out, o_stride);
    case 32: return accumulate_v<4>(kv, scores, s_stride, num_q, num_ctx, inv, out, o_stride);
    case 48: return accumulate_v<6>(kv, scores, s_stride, num_q, num_ctx, inv, out, o_stride);
    case 64: return accumulate_v<8>(kv, scores, s_stride, num_q, num_ctx, inv, out, o_stride);
    case 96: return accumulate_v<12>(kv, scores, s_stride, num_q, num_ctx, inv, out, o_stride);
    case 128: return accumulate_v<16>(kv, scores, s_stride, num_q, num_ctx, inv, out, o_stride);
    default: break;
  }
  for (int32_t h = 0; h < num_q; ++h) {
    const float* p = scores + h * s_stride;
    float* o = out + h * o_stride;
    for (int32_t d = 0; d < head_dim; ++d) o[d] = 0;
    for (int64_t t = 0; t < num_ctx; ++t) {
      const float* v = kv.v_row_f32(t);
      for (int32_t d = 0; d < head_dim; ++d) o[d] += p[t] * v[d];
    }
    for (int32_t d = 0; d < head_dim; ++d) o[d] *= inv[h];
  }
}

void attend_avx2(const float* q, const PagedKv& kv, int64_t num_ctx, float scale, float* scores, float* out) {
  attend_group_avx2(q, 1, 0, kv, num_ctx, scale, scores, 0, out, 0);
}

}  // namespace slimkv
