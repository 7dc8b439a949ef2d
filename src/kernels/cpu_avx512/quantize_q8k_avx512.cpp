// AVX-512 quantization of activations to Q8_K blocks (the K-quants' and IQ4_XS's pairing), bit-identical to
// quant_ref::quantize_q8_k (GGML's quantize_row_q8_K): the first value of the largest magnitude sets the scale,
// values round to nearest even (vcvtps2dq under the default rounding = GGML's nearest_int), sums per 16.
#include <immintrin.h>

#include <cstring>

#include "core/quant_blocks.h"

namespace slimkv {

void quantize_q8_k_avx512(const float* x, Q8_KBlock* out, int64_t n) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    Q8_KBlock& b = out[i];
    __m512 v[16];
    __m512 amax_v = _mm512_setzero_ps();
    for (int j = 0; j < 16; ++j) {
      v[j] = _mm512_loadu_ps(x + 16 * j);
      amax_v = _mm512_max_ps(amax_v, _mm512_andnot_ps(sign, v[j]));
    }
    const float amax = _mm512_reduce_max_ps(amax_v);
    if (amax == 0) {
      std::memset(&b, 0, sizeof(b));
      continue;
    }
    float mx = 0;  // the first value whose magnitude is amax, with its sign
    for (int j = 0; j < 16; ++j) {
      const __mmask16 at = _mm512_cmp_ps_mask(_mm512_andnot_ps(sign, v[j]), _mm512_set1_ps(amax), _CMP_EQ_OQ);
      if (at != 0) {
        mx = x[16 * j + __builtin_ctz(at)];
        break;
      }
    }
    const float iscale = -127.0f / mx;
    const __m512 s = _mm512_set1_ps(iscale);
    for (int j = 0; j < 16; ++j) {
      const __m512i q = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(s, v[j])), _mm512_set1_epi32(127));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(b.qs + 16 * j), _mm512_cvtepi32_epi8(q));
      b.bsums[j] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
    }
    b.d = 1 / iscale;
  }
}

}  // namespace slimkv
