// Scalar reference kernels: plain loops, the ground truth for the SIMD versions.
#include <cmath>

#include "core/half.h"
#include "kernels/dot.h"
#include "kernels/kv_codec.h"

namespace slimkv {
namespace {

float dot_f32(const float* a, const float* b, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

float dot_f16_f32(const uint16_t* a, const float* b, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += fp16_to_fp32(a[i]) * b[i];
  return s;
}

float dot_q8_0_q8_0(const Q8_0Block* a, const Q8_0Block* b, int64_t nb) {
  float s = 0;
  for (int64_t k = 0; k < nb; ++k) {
    int32_t acc = 0;
    for (int j = 0; j < 32; ++j) acc += int32_t(a[k].qs[j]) * int32_t(b[k].qs[j]);
    s += fp16_to_fp32(a[k].d) * fp16_to_fp32(b[k].d) * static_cast<float>(acc);
  }
  return s;
}

float dot_q4_0_q8_0(const Q4_0Block* a, const Q8_0Block* b, int64_t nb) {
  float s = 0;
  for (int64_t k = 0; k < nb; ++k) {
    int32_t acc = 0;
    for (int j = 0; j < 16; ++j) {
      acc += (int32_t(a[k].qs[j] & 0x0F) - 8) * int32_t(b[k].qs[j]);
      acc += (int32_t(a[k].qs[j] >> 4) - 8) * int32_t(b[k].qs[j + 16]);
    }
    s += fp16_to_fp32(a[k].d) * fp16_to_fp32(b[k].d) * static_cast<float>(acc);
  }
  return s;
}

void quantize_q8_0(const float* x, Q8_0Block* out, int64_t n) {
  for (int64_t k = 0; k < n / 32; ++k) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[k * 32 + j]));
    float d = amax / 127.0f;
    float id = d != 0 ? 1.0f / d : 0.0f;
    out[k].d = fp32_to_fp16(d);
    for (int j = 0; j < 32; ++j) out[k].qs[j] = static_cast<int8_t>(std::nearbyint(x[k * 32 + j] * id));
  }
}

void axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void attend(const float* q, const PagedKv& kv, int64_t num_ctx, float scale, float* scores, float* out) {
  float row[1024];  // one decoded head (dims <= 1024, checked by ModelConfig)
  float mx = -INFINITY;
  for (int64_t t = 0; t < num_ctx; ++t) {
    decode_kv_record(kv.k_row(t), kv.k_dim, kv.k_split, kv.dtype, row);
    scores[t] = dot_f32(q, row, kv.k_dim) * scale + (t < kv.num_bias_rows ? kv.row_bias[t] : 0.0f);
    mx = std::max(mx, scores[t]);
  }
  float sum = 0;
  for (int64_t t = 0; t < num_ctx; ++t) {
    scores[t] = std::exp(scores[t] - mx);
    sum += scores[t];
  }
  for (int32_t d = 0; d < kv.v_dim; ++d) out[d] = 0;
  for (int64_t t = 0; t < num_ctx; ++t) {
    decode_kv_head(kv.v_row(t), kv.v_dim, kv.value_dtype(), row);
    axpy(scores[t] / sum, row, out, kv.v_dim);
  }
}

void attend_group(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx, float scale,
                  float* scores, int64_t s_stride, float* out, int64_t o_stride) {
  for (int32_t h = 0; h < num_q; ++h) attend(q + h * q_stride, kv, num_ctx, scale, scores + h * s_stride, out + h * o_stride);
}

}  // namespace

const DotKernels kScalarDot = {dot_f32,      dot_f16_f32, dot_q8_0_q8_0, dot_q4_0_q8_0, quantize_q8_0, axpy, attend,
                               attend_group, nullptr,     nullptr};

bool gemm_panels_avx512(const WeightView& w, const float* x, int64_t num_tokens, float* y, int64_t r0,
                        int64_t r1);  // cpu_avx512/gemm_panels_avx512.cpp
void attend_avx512(const float* q, const PagedKv& kv, int64_t num_ctx, float scale, float* scores,
                   float* out);  // cpu_avx512/attention_avx512.cpp
void attend_group_avx512(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx,
                         float scale, float* scores, int64_t s_stride, float* out, int64_t o_stride);
bool gemm_quant_panels_avx512(const WeightView& w, const Q8_0Block* x, const int32_t* xcorr, int64_t num_tokens,
                              float* y, int64_t r0, int64_t r1);  // cpu_avx512/gemm_quant_panels_avx512.cpp
bool gemm_kquant_panels_avx512(const WeightView& w, const Q8_KBlock* x, const int32_t* terms, int64_t num_tokens,
                               float* y, int64_t r0, int64_t r1);  // cpu_avx512/gemm_kquant_panels_avx512.cpp
void quantize_q8_k_avx512(const float* x, Q8_KBlock* out, int64_t n);  // cpu_avx512/quantize_q8k_avx512.cpp
int64_t pick_top_rows_avx512(const float* scores, int32_t num_q, int64_t s_stride, int64_t num_ctx, int64_t sinks,
                             int64_t window_begin, float scale, int64_t budget, int32_t* rows,
                             uint32_t* keys);  // cpu_avx512/select_avx512.cpp
bool score_rows_avx512(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t begin, int64_t end,
                       float* scores, int64_t s_stride);  // cpu_avx512/attention_avx512.cpp
bool score_index_avx512(const float* q_lat, int32_t num_q, int32_t rank, const PagedKv& index, int64_t begin,
                        int64_t end, float* scores, int64_t s_stride);  // cpu_avx512/index_score_avx512.cpp
bool attend_tile_avx2(const AttendTile& tile, const PagedKv& kv, int64_t begin, int64_t end, float scale,
                      TileState& st);  // cpu_avx2/attention_tile_avx2.cpp
bool gemm_avx512(DType w_dtype, const void* w, int64_t rows, int64_t cols, const void* x, int64_t num_tokens,
                 float* y, int64_t ldy);  // cpu_avx512/gemm_avx512.cpp

const DotKernels& dot_kernels(Isa isa) {
  switch (isa) {
    case Isa::Avx512: {
      static const DotKernels t = [] {  // AVX-512 table borrows the AVX2 quantizer
        DotKernels k = kAvx512Dot;
        k.quantize_q8_0 = kAvx2Dot.quantize_q8_0;
        k.attend = attend_avx512;  // int8 rows; everything else through the AVX2 kernel
        k.attend_group = attend_group_avx512;
        k.gemm = gemm_avx512;
        k.gemm_panels = gemm_panels_avx512;
        k.gemm_quant_panels = gemm_quant_panels_avx512;
        k.gemm_kquant_panels = gemm_kquant_panels_avx512;
        k.quantize_q8_k = quantize_q8_k_avx512;
        k.score_rows = score_rows_avx512;
        k.score_index = score_index_avx512;
        k.pick_top_rows = pick_top_rows_avx512;
        k.attend_tile = attend_tile_avx2;  // the AVX2 tile kernel (no AVX-512 one yet)
        return k;
      }();
      return t;
    }
    case Isa::Avx2: {
      static const DotKernels t = [] {
        DotKernels k = kAvx2Dot;
        k.attend_tile = attend_tile_avx2;
        return k;
      }();
      return t;
    }
    default: return kScalarDot;
  }
}

}  // namespace slimkv
