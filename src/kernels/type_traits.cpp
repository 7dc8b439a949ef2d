// The type traits table: one row per DType. Dot kernels for F32 / F16 / Q8_0 / Q4_0 come from the DotKernels tables
// (dot.h); every other type's from its quant_ref function (scalar) and the per-ISA rows of the SIMD files.
#include "kernels/type_traits.h"

#include <array>

#include "core/check.h"
#include "core/half.h"
#include "kernels/dot.h"
#include "kernels/quant_ref.h"

namespace slimkv {
namespace {

using namespace quant_ref;

// Adapters from the DotKernels signatures (block counts, typed pointers) to VecDotFn.
template <int kIsa>
float dot_f32_row(const void* w, const void* x, int64_t n) {
  return dot_kernels(static_cast<Isa>(kIsa)).f32(static_cast<const float*>(w), static_cast<const float*>(x), n);
}
template <int kIsa>
float dot_f16_row(const void* w, const void* x, int64_t n) {
  return dot_kernels(static_cast<Isa>(kIsa)).f16_f32(static_cast<const uint16_t*>(w), static_cast<const float*>(x), n);
}
template <int kIsa>
float dot_q8_0_row(const void* w, const void* x, int64_t n) {
  return dot_kernels(static_cast<Isa>(kIsa))
      .q8_0_q8_0(static_cast<const Q8_0Block*>(w), static_cast<const Q8_0Block*>(x), n / kQuantBlock);
}
template <int kIsa>
float dot_q4_0_row(const void* w, const void* x, int64_t n) {
  return dot_kernels(static_cast<Isa>(kIsa))
      .q4_0_q8_0(static_cast<const Q4_0Block*>(w), static_cast<const Q8_0Block*>(x), n / kQuantBlock);
}
template <DType kT>
void gemm_dotk(const void* w, int64_t rows, int64_t cols, const void* x, int64_t T, float* y, int64_t ldy) {
  SLIMKV_CHECK(dot_kernels(Isa::Avx512).gemm(kT, w, rows, cols, x, T, y, ldy), "gemm: {} not handled", dtype_name(kT));
}

}  // namespace

// cpu_avx2/dot_avx2.cpp: blocked matmuls, bit for bit one AVX2 dot per (row, token).
void gemm_f32_avx2(const void* w, int64_t rows, int64_t cols, const void* x, int64_t T, float* y, int64_t ldy);
void gemm_f16_avx2(const void* w, int64_t rows, int64_t cols, const void* x, int64_t T, float* y, int64_t ldy);
void gemm_q8_0_avx2(const void* w, int64_t rows, int64_t cols, const void* x, int64_t T, float* y, int64_t ldy);
void gemm_q4_0_avx2(const void* w, int64_t rows, int64_t cols, const void* x, int64_t T, float* y, int64_t ldy);

namespace {

void f32_to_float(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<const float*>(w)[i];
}
void f16_to_float(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(static_cast<const uint16_t*>(w)[i]);
}
void bf16_to_float(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_fp32(static_cast<const uint16_t*>(w)[i]);
}
void i32_to_float(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<const int32_t*>(w)[i]);
}
void fp8_e4m3_to_float(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp8_e4m3_to_fp32(static_cast<const uint8_t*>(w)[i]);
}
void e8m0_to_float(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = e8m0_to_fp32(static_cast<const uint8_t*>(w)[i]);
}
void i8_to_float(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<const int8_t*>(w)[i]);
}
void q8_0_to_float(const void* w, float* y, int64_t n) {
  const auto* b = static_cast<const Q8_0Block*>(w);
  for (int64_t k = 0; k < n / 32; ++k) {
    const float d = fp16_to_fp32(b[k].d);
    for (int j = 0; j < 32; ++j) y[k * 32 + j] = d * b[k].qs[j];
  }
}
void q4_0_to_float(const void* w, float* y, int64_t n) {
  const auto* b = static_cast<const Q4_0Block*>(w);
  for (int64_t k = 0; k < n / 32; ++k) {
    const float d = fp16_to_fp32(b[k].d);
    for (int j = 0; j < 16; ++j) {
      y[k * 32 + j] = d * (int(b[k].qs[j] & 0x0F) - 8);
      y[k * 32 + j + 16] = d * (int(b[k].qs[j] >> 4) - 8);
    }
  }
}
void f32_from_float(const float* x, void* w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) static_cast<float*>(w)[i] = x[i];
}
void f16_from_float(const float* x, void* w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(w)[i] = fp32_to_fp16(x[i]);
}
void bf16_from_float(const float* x, void* w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(w)[i] = fp32_to_bf16(x[i]);
}
void q8_0_from_float(const float* x, void* w, int64_t n) {
  dot_kernels(Isa::Scalar).quantize_q8_0(x, static_cast<Q8_0Block*>(w), n);
}
void q4_0_from_float(const float* x, void* w, int64_t n) {  // llama.cpp: d = max / -8, max the signed largest |x|
  auto* out = static_cast<Q4_0Block*>(w);
  for (int64_t k = 0; k < n / 32; ++k) {
    const float* b = x + k * 32;
    float amax = 0, mx = 0;
    for (int j = 0; j < 32; ++j) {
      if (b[j] > amax || -b[j] > amax) { amax = b[j] < 0 ? -b[j] : b[j]; mx = b[j]; }
    }
    const float d = mx / -8.0f, id = d ? 1.0f / d : 0.0f;
    out[k].d = fp32_to_fp16(d);
    for (int j = 0; j < 16; ++j) {
      const int lo = std::min(15, static_cast<int>(b[j] * id + 8.5f));
      const int hi = std::min(15, static_cast<int>(b[j + 16] * id + 8.5f));
      out[k].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

struct Row {
  DType t;
  ToFloatFn to_float;
  FromFloatFn from_float;
  VecDotFn dot[kNumIsa];  // nulls after the scalar one: the SIMD files' rows, else the scalar reference
  GemmFn gemm[kNumIsa];
};

constexpr int S = 0, A2 = 1, A5 = 2;
// clang-format off
const Row kRows[kNumDTypes] = {
  {DType::F32,    f32_to_float,   f32_from_float,  {dot_f32_row<S>, dot_f32_row<A2>, dot_f32_row<A5>}, {nullptr, gemm_f32_avx2, gemm_dotk<DType::F32>}},
  {DType::F16,    f16_to_float,   f16_from_float,  {dot_f16_row<S>, dot_f16_row<A2>, dot_f16_row<A5>}, {nullptr, gemm_f16_avx2, gemm_dotk<DType::F16>}},
  {DType::BF16,   bf16_to_float,  bf16_from_float, {}, {}},
  {DType::Q8_0,   q8_0_to_float,  q8_0_from_float, {dot_q8_0_row<S>, dot_q8_0_row<A2>, dot_q8_0_row<A5>}, {nullptr, gemm_q8_0_avx2, gemm_dotk<DType::Q8_0>}},
  {DType::Q4_0,   q4_0_to_float,  q4_0_from_float, {dot_q4_0_row<S>, dot_q4_0_row<A2>, dot_q4_0_row<A5>}, {nullptr, gemm_q4_0_avx2, gemm_dotk<DType::Q4_0>}},
  {DType::I32,    i32_to_float,   nullptr,         {}, {}},
  {DType::Q4_1,   dequant_q4_1,   quantize_q4_1,   {dot_q4_1}, {}},
  {DType::Q5_0,   dequant_q5_0,   quantize_q5_0,   {dot_q5_0}, {}},
  {DType::Q5_1,   dequant_q5_1,   quantize_q5_1,   {dot_q5_1}, {}},
  {DType::Q2_K,   dequant_q2_k,   quantize_q2_k,   {dot_q2_k}, {}},
  {DType::Q3_K,   dequant_q3_k,   quantize_q3_k,   {dot_q3_k}, {}},
  {DType::Q4_K,   dequant_q4_k,   quantize_q4_k,   {dot_q4_k}, {}},
  {DType::Q5_K,   dequant_q5_k,   quantize_q5_k,   {dot_q5_k}, {}},
  {DType::Q6_K,   dequant_q6_k,   quantize_q6_k,   {dot_q6_k}, {}},
  {DType::IQ4_NL, dequant_iq4_nl, quantize_iq4_nl, {dot_iq4_nl}, {}},
  {DType::IQ4_XS, dequant_iq4_xs, quantize_iq4_xs, {dot_iq4_xs}, {}},
  {DType::MXFP4,  dequant_mxfp4,  quantize_mxfp4,  {dot_mxfp4}, {}},
  {DType::Q8_1,   dequant_q8_1,   quantize_q8_1,   {}, {}},
  {DType::Q8_K,   dequant_q8_k,   quantize_q8_k,   {}, {}},
  {DType::F8_E4M3, fp8_e4m3_to_float, nullptr,     {}, {}},
  {DType::E8M0,   e8m0_to_float,  nullptr,         {}, {}},
  {DType::I8,     i8_to_float,    nullptr,         {}, {}},
};
// clang-format on

std::array<TypeTraits, kNumDTypes> build() {
  std::array<TypeTraits, kNumDTypes> out;
  const Isa best = detected_isa();  // rows of ISAs this CPU lacks stay null (their code must not run)
  const IsaTypeKernels* simd[kNumIsa] = {nullptr, best >= Isa::Avx2 ? avx2_type_kernels() : nullptr,
                                         best >= Isa::Avx512 ? avx512_type_kernels() : nullptr};
  for (int i = 0; i < kNumDTypes; ++i) {
    const Row& r = kRows[i];
    SLIMKV_CHECK(static_cast<int>(r.t) == i, "type traits row {} is out of order", i);
    TypeTraits& t = out[i];
    t.info = &kDTypeInfo[i];
    t.to_float = r.to_float;
    t.from_float = r.from_float;
    for (int isa = 0; isa < kNumIsa; ++isa) {
      t.dot[isa] = r.dot[isa] ? r.dot[isa] : (simd[isa] && simd[isa][i].dot ? simd[isa][i].dot : r.dot[S]);
      t.gemm[isa] = r.gemm[isa] ? r.gemm[isa] : (simd[isa] ? simd[isa][i].gemm : nullptr);
    }
    SLIMKV_CHECK(!t.info->weight || t.dot[S] != nullptr, "type {} has no dot product", t.info->name);
  }
  return out;
}

}  // namespace

const TypeTraits& type_traits(DType t) {
  static const std::array<TypeTraits, kNumDTypes> table = build();
  return table[static_cast<int>(t)];
}

void quantize_activations(DType act, const float* x, void* out, int64_t n, Isa isa) {
  if (act == DType::Q8_0) {
    dot_kernels(isa).quantize_q8_0(x, static_cast<Q8_0Block*>(out), n);
    return;
  }
  if (act == DType::Q8_K && dot_kernels(isa).quantize_q8_k != nullptr) {
    dot_kernels(isa).quantize_q8_k(x, static_cast<Q8_KBlock*>(out), n);
    return;
  }
  type_traits(act).from_float(x, out, n);
}

}  // namespace slimkv
