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
  // F32 / F16: [ceil(rows / 16), cols, 16] — for each k, the 16 rows of a panel are contiguous, so a matmul
  // streams the weights once and needs no horizontal sums (see pack_panels). Rows padded with zeros.
  // Q4_0 / Q8_0: ceil(rows / 16) panels (QuantPanels, pack_quant_panels); Q4_K / Q5_K / Q6_K / IQ4_XS:
  // kquant_panels.h. Other dtypes: never.
  bool panel = false;
  int64_t row_bytes() const { return cols / dtype_block_elems(dtype) * dtype_block_bytes(dtype); }
  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + r * row_bytes(); }
};

// y[T, rows] = x[T, cols] · W^T. pool may be null (single thread). isa selects the kernel table.
void matmul(const WeightView& w, const float* x, int64_t num_tokens, float* y, ThreadPool* pool,
            Isa isa = active_isa());

// y_i[T, rows_i] = x[T, cols] · W_i^T for up to 4 matrices that read the same x (Q / K / V, gate / up). K-quant
// panel matrices of equal columns share one quantization of x and one split of the threads over all their panels
// (one barrier, not one per matrix); anything else runs one matmul each. The same kernels per panel either way:
// == separate matmul calls, bit for bit.
struct MatmulOut {
  const WeightView* w = nullptr;
  float* y = nullptr;
};
void matmul_same_input(const MatmulOut* outs, int n, const float* x, int64_t num_tokens, ThreadPool* pool,
                       Isa isa = active_isa());

// out[cols] = row r of W, dequantized to f32 (embedding lookups; panel-packed F32 views too).
void dequantize_row(const WeightView& w, int64_t r, float* out);

// Repacks a row-major F32 or F16 view into panels at dst, which holds panel_elems(w) values of its dtype. Every
// output of a panel matmul is a sequential fused multiply-add chain over k (F16 weights widened exactly to f32),
// the same whatever the batch: batched == single, bit for bit.
int64_t panel_elems(const WeightView& w);
WeightView pack_panels(const WeightView& w, void* dst);

// Q4_0 and Q8_0 interleaved 16 rows at a time (issue P; llama.cpp repacks Q4_0 likewise). Per panel of 16 rows:
// its nb blocks' scales first ([nb][16] fp16), then their weights ([nb][groups][16][4] bytes: group j holds each
// row's 4 bytes 4j..4j+3 — for Q4_0 (4 groups) the raw bytes, low nibbles elements 4j..4j+3 and high nibbles
// 16 + 4j..; for Q8_0 (8 groups) the values plus 128, unsigned for VNNI's unsigned x signed product). One vpdpbusd
// then serves 16 rows and the scale epilogue runs once per block for all 16; a block's weights start 64-byte
// aligned (the arena is, and nb is even in every real model). Rows past the matrix: zero scales.
struct QuantPanels {
  const uint8_t* base = nullptr;
  int64_t nb = 0;   // 32-value blocks per row
  int groups = 4;   // 4 (Q4_0) or 8 (Q8_0) of 64 bytes per block
  int64_t panel_bytes() const { return nb * (32 + groups * 64); }
  const uint16_t* scales(int64_t p, int64_t k) const {
    return reinterpret_cast<const uint16_t*>(base + p * panel_bytes() + k * 32);
  }
  const uint8_t* qs(int64_t p, int64_t k) const { return base + p * panel_bytes() + nb * 32 + k * groups * 64; }
};
QuantPanels quant_panels(const WeightView& w);  // a panel-packed Q4_0 / Q8_0 view's layout
// Bytes of a Q4_0 / Q8_0 view in panels, and the repacking into dst (which holds that many).
int64_t quant_panel_bytes(const WeightView& w);
WeightView pack_quant_panels(const WeightView& w, uint8_t* dst);
bool has_quant_panels(DType t);  // Q4_0, Q8_0
// Whether the VNNI kernel can take w in panels: an even number of blocks per row keeps every block's weights 64-byte
// aligned after the panel's scales. Odd ones (stories15M's 288 columns: 9 blocks) stay row-major — in panels they
// would run the scalar reference.
bool quant_panels_fit(const WeightView& w);
// Per activation block, the panel weights' offset (Q4_0: 8, Q8_0: 128) x the block's sum: the kernels subtract it
// from the unsigned dot. xcorr[i] for x[i], i < num_blocks.
void quant_panel_terms(DType t, const Q8_0Block* x, int64_t num_blocks, int32_t* xcorr);
// The scalar reference of a Q4_0 / Q8_0 panel matmul over rows [r0, r1), all tokens (x: Q8_0 blocks
// [T, cols / 32]): per (row, token), the blocks' exact integer dots scaled and added in block order.
void matmul_quant_panels_ref(const WeightView& w, const void* x, int64_t T, float* y, int64_t r0, int64_t r1);

// The bytes `w` occupies in the panel layout of its dtype (F32 / F16 panels, Q4_0 / Q8_0 QuantPanels, the K-quant
// panels of kquant_panels.h), packed or not yet; and the bytes its data occupies as it is (panels or rows).
int64_t panel_view_bytes(const WeightView& w);
int64_t weight_view_bytes(const WeightView& w);

// Asks for 2 MiB pages on the whole 2 MiB pages inside [p, p + bytes) (best effort: transparent huge pages in
// "madvise" or "always" mode). Weights streamed once per decode step then miss the TLB 512× less often. Call it
// before the memory is first touched.
void advise_huge_pages(void* p, size_t bytes);

}  // namespace slimkv
