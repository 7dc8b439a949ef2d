// Matrix products against weight matrices of any supported dtype: y[T, rows] = x[T, cols] · W[rows, cols]^T.
// Splits rows across the thread pool; quantizes activations to the weight type's pairing (Q8_0 / Q8_1 / Q8_K, as
// llama.cpp does) and runs the per-ISA kernels of the type traits table (kernels/type_traits.h).
// Must not know: which layer or model the weights belong to.
#pragma once
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/isa.h"

namespace slimkv {

constexpr int64_t kPanelRows = 16;

struct WeightView {
  DType dtype = DType::F32;
  int64_t rows = 0, cols = 0;  // logical [rows, cols]
  const void* data = nullptr;  // row-major [rows, cols], or panels when `panel` is set
  // F32: [ceil(rows / 16), cols, 16] — for each k, the 16 rows of a panel are contiguous, so a matmul
  // streams the weights once and needs no horizontal sums (see pack_panels). Rows padded with zeros.
  // Q4_0: [ceil(rows / 16), cols / 32] units of Q4_0Panel (pack_q4_0_panels). Other dtypes: never.
  bool panel = false;
  int64_t row_bytes() const { return cols / dtype_block_elems(dtype) * dtype_block_bytes(dtype); }
  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + r * row_bytes(); }
};

// y[T, rows] = x[T, cols] · W^T. pool may be null (single thread). isa selects the kernel table.
void matmul(const WeightView& w, const float* x, int64_t num_tokens, float* y, ThreadPool* pool,
            Isa isa = active_isa());

// out[cols] = row r of W, dequantized to f32 (embedding lookups; panel-packed F32 views too).
void dequantize_row(const WeightView& w, int64_t r, float* out);

// Repacks a row-major F32 view into panels at dst, which holds panel_floats(w) floats. Every output of a panel
// matmul is a sequential fused multiply-add chain over k, the same whatever the batch: batched == single, bit for bit.
int64_t panel_floats(const WeightView& w);
WeightView pack_panels(const WeightView& w, float* dst);

// Q4_0 interleaved 16 rows at a time (issue P: llama.cpp repacks Q4_0 likewise): per panel and 32-column block,
// the 16 rows' nibbles grouped 4 bytes a row — qs[j][r][0..3] = row r's bytes 4j..4j+3 (low nibbles elements
// 4j..4j+3, high nibbles 16 + 4j..) — then the 16 fp16 scales. One VNNI multiply-add then serves 16 rows, and the
// scale epilogue runs once per block for all 16 (not once per row and token). Rows padded with zero scales.
struct Q4_0Panel {
  uint8_t qs[4][kPanelRows][4];
  uint16_t d[kPanelRows];
};
static_assert(sizeof(Q4_0Panel) == 18 * kPanelRows);
int64_t q4_0_panel_bytes(const WeightView& w);
WeightView pack_q4_0_panels(const WeightView& w, uint8_t* dst);
// The scalar reference of a Q4_0 panel matmul over rows [r0, r1), all tokens (x: Q8_0 blocks [T, cols / 32]):
// per (row, token), the blocks' exact integer dots scaled and added in block order.
void matmul_q4_0_panels_ref(const WeightView& w, const void* x, int64_t T, float* y, int64_t r0, int64_t r1);

// Asks for 2 MiB pages on the whole 2 MiB pages inside [p, p + bytes) (best effort: transparent huge pages in
// "madvise" or "always" mode). Weights streamed once per decode step then miss the TLB 512× less often. Call it
// before the memory is first touched.
void advise_huge_pages(void* p, size_t bytes);

}  // namespace slimkv
