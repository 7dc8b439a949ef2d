// AVX2 attention of one query head over contiguous cached rows, with a vectorised exp (Cephes-style
// polynomial, ~1 ulp) so softmax does not dominate for small head dims. Scalar reference: cpu_scalar.cpp.
#include <immintrin.h>

#include <cmath>

#include "kernels/cpu_avx2/simd_avx2.h"
#include "kernels/dot.h"

namespace slimkv {

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

using simd::hsum;

inline float dot(const float* a, const float* b, int32_t n) {
  __m256 acc = _mm256_setzero_ps();
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  float s = hsum(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Softmax numerators in place (exp(s - max)); returns their sum.
float exp_shifted(float* s, int64_t n, float mx) {
  __m256 vmx = _mm256_set1_ps(mx), acc = _mm256_setzero_ps();
  int64_t t = 0;
  for (; t + 8 <= n; t += 8) {
    __m256 e = exp256_ps(_mm256_sub_ps(_mm256_loadu_ps(s + t), vmx));
    _mm256_storeu_ps(s + t, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = hsum(acc);
  for (; t < n; ++t) {
    s[t] = std::exp(s[t] - mx);
    sum += s[t];
  }
  return sum;
}

}  // namespace

// Walks the sequence page by page: within a page rows are contiguous (k_row_stride apart).
void attend_avx2(const float* q, const PagedKv& kv, int64_t num_ctx, int32_t head_dim, float scale, float* scores,
                 float* out) {
  const int32_t bs = kv.block_size;
  float mx = -INFINITY;
  for (int64_t t0 = 0; t0 < num_ctx; t0 += bs) {
    const float* k = kv.k_row(t0);
    const int64_t n = std::min<int64_t>(bs, num_ctx - t0);
    for (int64_t i = 0; i < n; ++i) {
      float s = dot(q, k + i * kv.k_row_stride, head_dim) * scale;
      scores[t0 + i] = s;
      mx = std::max(mx, s);
    }
  }
  const float inv = 1.0f / exp_shifted(scores, num_ctx, mx);
  if (head_dim % 8 == 0 && head_dim <= 64) {  // accumulate in registers
    __m256 acc[8];
    const int32_t nv = head_dim / 8;
    for (int32_t j = 0; j < nv; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t t0 = 0; t0 < num_ctx; t0 += bs) {
      const float* v = kv.v_row(t0);
      const int64_t n = std::min<int64_t>(bs, num_ctx - t0);
      for (int64_t i = 0; i < n; ++i, v += kv.v_row_stride) {
        __m256 p = _mm256_set1_ps(scores[t0 + i]);
        for (int32_t j = 0; j < nv; ++j) acc[j] = _mm256_fmadd_ps(p, _mm256_loadu_ps(v + 8 * j), acc[j]);
      }
    }
    __m256 vinv = _mm256_set1_ps(inv);
    for (int32_t j = 0; j < nv; ++j) _mm256_storeu_ps(out + 8 * j, _mm256_mul_ps(acc[j], vinv));
    return;
  }
  for (int32_t d = 0; d < head_dim; ++d) out[d] = 0;
  for (int64_t t = 0; t < num_ctx; ++t) {
    const float p = scores[t];
    const float* v = kv.v_row(t);
    for (int32_t d = 0; d < head_dim; ++d) out[d] += p * v[d];
  }
  for (int32_t d = 0; d < head_dim; ++d) out[d] *= inv;
}

}  // namespace slimkv
