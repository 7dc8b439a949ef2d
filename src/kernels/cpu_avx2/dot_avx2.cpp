// AVX2 + FMA + F16C dot kernels (compiled with -mavx2 -mfma -mf16c, used only when the CPU has them).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/half.h"
#include "kernels/cpu_avx2/dot_tiles_avx2.h"
#include "kernels/cpu_avx2/simd_avx2.h"
#include "kernels/dot.h"

namespace slimkv {
namespace {

using namespace avx2;

// The dot products are the one-token tiles (dot_tiles_avx2.h).
float dot_f32(const float* a, const float* b, int64_t n) {
  float s;
  tile_f32<1>(a, b, n, n, &s);
  return s;
}
float dot_f16_f32(const uint16_t* a, const float* b, int64_t n) {
  float s;
  tile_f16<1>(a, b, n, n, &s);
  return s;
}
float dot_q8_0_q8_0(const Q8_0Block* a, const Q8_0Block* b, int64_t nb) {
  float s;
  tile_q8<1, false>(a, b, nb, nb, &s);
  return s;
}
float dot_q4_0_q8_0(const Q4_0Block* a, const Q8_0Block* b, int64_t nb) {
  float s;
  tile_q8<1, true>(a, b, nb, nb, &s);
  return s;
}

// run(t0, integral_constant<TT>) over tokens [0, T) in tiles of kMax, then one tile of the rest.
template <int N, typename Run>
void run_rest(int64_t t0, int64_t rest, Run& run) {
  if constexpr (N > 0) {
    if (rest == N) run(t0, std::integral_constant<int, N>{});
    else run_rest<N - 1>(t0, rest, run);
  }
}
template <int kMax, typename Run>
void for_token_tiles(int64_t T, Run run) {
  int64_t t0 = 0;
  for (; t0 + kMax <= T; t0 += kMax) run(t0, std::integral_constant<int, kMax>{});
  run_rest<kMax - 1>(t0, T - t0, run);
}

// y[t * ldy + r] = W row r . token t, for rows [0, rows) of a row-major W (W_t: its element type; Act: the
// tokens' row element; kMax tokens a tile). Tokens in blocks of 64, so a block's activations stay in cache while
// every row passes over them.
template <typename W_t, typename Act, int kMax, typename Tile>
void gemm_tiles(const void* w, int64_t rows, int64_t row_elems, int64_t x_elems, const void* x, int64_t T, float* y,
                int64_t ldy, Tile tile) {
  constexpr int64_t kTokenBlock = 64;
  const auto* wr = static_cast<const W_t*>(w);
  const auto* xb = static_cast<const Act*>(x);
  for (int64_t tb = 0; tb < T; tb += kTokenBlock) {
    const int64_t nt = std::min(kTokenBlock, T - tb);
    for (int64_t r = 0; r < rows; ++r) {
      for_token_tiles<kMax>(nt, [&](int64_t t0, auto tt) {
        constexpr int TT = decltype(tt)::value;
        float out[TT];
        tile.template operator()<TT>(wr + r * row_elems, xb + (tb + t0) * x_elems, x_elems, out);
        for (int t = 0; t < TT; ++t) y[(tb + t0 + t) * ldy + r] = out[t];
      });
    }
  }
}

void quantize_q8_0(const float* x, Q8_0Block* out, int64_t n) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  for (int64_t k = 0; k < n / 32; ++k) {
    const float* xb = x + k * 32;
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_loadu_ps(xb + 8 * j);
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_mask, v[j]));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    float d = _mm_cvtss_f32(m) / 127.0f;
    float id = d != 0 ? 1.0f / d : 0.0f;
    out[k].d = fp32_to_fp16(d);
    __m256 vid = _mm256_set1_ps(id);
    __m256i i32[4];
    for (int j = 0; j < 4; ++j) {
      i32[j] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[j], vid), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    __m256i i16a = _mm256_packs_epi32(i32[0], i32[1]);
    __m256i i16b = _mm256_packs_epi32(i32[2], i32[3]);
    __m256i i8 = _mm256_packs_epi16(i16a, i16b);
    i8 = _mm256_permutevar8x32_epi32(i8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[k].qs), i8);
  }
}

void axpy(float a, const float* x, float* y, int64_t n) {
  __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

}  // namespace

void attend_avx2(const float* q, const PagedKv& kv, int64_t num_ctx, float scale, float* scores,
                 float* out);  // attention_avx2.cpp
void attend_group_avx2(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx,
                       float scale, float* scores, int64_t s_stride, float* out, int64_t o_stride);

// Blocked matmuls of row-major weights (the type traits' AVX2 gemm column): bit for bit one dot per (row, token).
void gemm_f32_avx2(const void* w, int64_t rows, int64_t cols, const void* x, int64_t T, float* y, int64_t ldy) {
  gemm_tiles<float, float, 3>(w, rows, cols, cols, x, T, y, ldy, []<int TT>(const float* a, const float* b,
                                                                              int64_t ld, float* out) {
    tile_f32<TT>(a, b, ld, ld, out);
  });
}
void gemm_f16_avx2(const void* w, int64_t rows, int64_t cols, const void* x, int64_t T, float* y, int64_t ldy) {
  gemm_tiles<uint16_t, float, 6>(w, rows, cols, cols, x, T, y, ldy, []<int TT>(const uint16_t* a, const float* b,
                                                                               int64_t ld, float* out) {
    tile_f16<TT>(a, b, ld, ld, out);
  });
}
template <typename Block, bool kQ4>  // Q8_0 / Q4_0 weights, Q8_0 tokens: rows of cols / 32 blocks
void gemm_q8_tiles(const void* w, int64_t rows, int64_t cols, const void* x, int64_t T, float* y, int64_t ldy) {
  const int64_t nb = cols / kQuantBlock;
  gemm_tiles<Block, Q8_0Block, 8>(w, rows, nb, nb, x, T, y, ldy, []<int TT>(const Block* a, const Q8_0Block* b,
                                                                           int64_t ld, float* out) {
    tile_q8<TT, kQ4>(a, b, ld, ld, out);
  });
}
void gemm_q8_0_avx2(const void* w, int64_t rows, int64_t cols, const void* x, int64_t T, float* y, int64_t ldy) {
  gemm_q8_tiles<Q8_0Block, false>(w, rows, cols, x, T, y, ldy);
}
void gemm_q4_0_avx2(const void* w, int64_t rows, int64_t cols, const void* x, int64_t T, float* y, int64_t ldy) {
  gemm_q8_tiles<Q4_0Block, true>(w, rows, cols, x, T, y, ldy);
}

const DotKernels kAvx2Dot = {dot_f32, dot_f16_f32,       dot_q8_0_q8_0, dot_q4_0_q8_0, quantize_q8_0, axpy,
                             attend_avx2, attend_group_avx2, nullptr,    nullptr};

}  // namespace slimkv
