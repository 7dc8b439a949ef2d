// Matrix products against weight matrices of any supported dtype: y[T, rows] = x[T, cols] · W[rows, cols]^T.
// Splits rows across the thread pool; quantizes activations to Q8_0 for Q8_0/Q4_0 weights (as llama.cpp does).
// Must not know: which layer or model the weights belong to.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/isa.h"

namespace slimkv {

struct WeightView {
  DType dtype = DType::F32;
  int64_t rows = 0, cols = 0;  // row-major [rows, cols]
  const void* data = nullptr;
  int64_t row_bytes() const { return cols / dtype_block_elems(dtype) * dtype_block_bytes(dtype); }
  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + r * row_bytes(); }
};

// y[T, rows] = x[T, cols] · W^T. pool may be null (single thread). isa selects the kernel table.
void matmul(const WeightView& w, const float* x, int64_t num_tokens, float* y, ThreadPool* pool,
            Isa isa = active_isa());

// out[cols] = row r of W, dequantized to f32 (embedding lookups).
void dequantize_row(const WeightView& w, int64_t r, float* out);

}  // namespace slimkv
