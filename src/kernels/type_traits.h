// The type traits table's function half: per DType (core/dtype.h holds its data half), the scalar reference
// dequantization and quantization and, per ISA, the dot product of a weight row with its paired activation row and
// the optional blocked matmul — one row per type in type_traits.cpp, as GGML's type_traits. Adding a weight type
// touches this table, core/dtype.h, core/quant_blocks.h, a quant_ref file and (for speed) the SIMD kernel files.
// Must not know: tensors, layers, file formats.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/isa.h"

namespace slimkv {

inline constexpr int kNumIsa = 3;

// n = values in the row, a multiple of the type's block size.
using ToFloatFn = void (*)(const void* blocks, float* out, int64_t n);
using FromFloatFn = void (*)(const float* x, void* blocks, int64_t n);
using VecDotFn = float (*)(const void* w, const void* x, int64_t n);  // x: the row in the type's activation dtype
// y[t * ldy + r] = W[r] · x[t] for r < rows, t < num_tokens; W rows contiguous, x rows in the activation dtype.
using GemmFn = void (*)(const void* w, int64_t rows, int64_t cols, const void* x, int64_t num_tokens, float* y,
                        int64_t ldy);

// One ISA's kernels for one type (a SIMD file fills the types it speeds up; nulls fall back to the reference).
struct IsaTypeKernels {
  VecDotFn dot = nullptr;
  GemmFn gemm = nullptr;
};

struct TypeTraits {
  const DTypeInfo* info = nullptr;
  ToFloatFn to_float = nullptr;      // reference dequantization (bit-exact with GGML)
  FromFloatFn from_float = nullptr;  // reference quantizer (GGUF writer; activation types: GGML's reference)
  VecDotFn dot[kNumIsa] = {};        // per Isa; never null for a weight type
  GemmFn gemm[kNumIsa] = {};         // per Isa; null = one dot per (row, token)
};

const TypeTraits& type_traits(DType t);

// Activations x[n] (f32) -> row of the activation type `act` (Q8_0 / Q8_1 / Q8_K) at out, fastest available.
void quantize_activations(DType act, const float* x, void* out, int64_t n, Isa isa);

// Per-ISA kernel rows, indexed by DType (defined in cpu_avx2/ and cpu_avx512/). Functions, not globals: they run
// code compiled for their ISA, so they are called only where the CPU has it (a static initializer in those files
// would run AVX-512 stores at start-up on a CPU without AVX-512).
const IsaTypeKernels* avx2_type_kernels();
const IsaTypeKernels* avx512_type_kernels();

}  // namespace slimkv
