// Dot-product kernels, one table per ISA: the innermost loops of every matmul and attention score.
// Scalar versions (cpu_scalar.cpp) are the reference; AVX2 / AVX-512 versions are tested against them.
// Must not know: tensors, layers or threads.
#pragma once
#include <cstdint>
#include <optional>

#include "core/dtype.h"
#include "kernels/isa.h"

namespace slimkv {
struct WeightView;
struct Q8_KBlock;
struct AttendTile;
struct TileState;
}

namespace slimkv {

// How many pages ahead of the one being read the attention kernels prefetch.
inline constexpr int32_t kPrefetchPages = 2;
// The most query heads one attend_group call serves (callers split larger GQA groups).
inline constexpr int32_t kMaxAttendGroup = 16;

// Where one KV head's rows of one sequence live: token t's row starts at
// k_base + (block_ids[t / block_size] * block_size + t % block_size) * k_row_bytes (V alike: rows of consecutive
// slots are consecutive), and holds the head's record in `dtype` (core/dtype.h). F32 rows are plain floats.

struct PagedKv {
  const uint8_t* k_base = nullptr;  // layer's K region + the head's offset
  const uint8_t* v_base = nullptr;
  const int32_t* block_ids = nullptr;
  int32_t block_size = 1;
  int64_t k_row_bytes = 0, v_row_bytes = 0;  // bytes between consecutive tokens' rows within a block
  KvDtype dtype = KvDtype::F32;  // keys' storage dtype (and the values' unless v_dtype is set)
  int32_t k_dim = 0, v_dim = 0;  // values per stored key / value row of this head
  int32_t k_split = 0;           // key rows of two parts, each with its own scale (kv_record_bytes); 0 = one part
  // Sparse retention: rows [0, sink_tokens) are positions [0, sink_tokens); row i >= sink_tokens is position
  // window_begin + (i - sink_tokens). Both 0 = rows are positions (full attention).
  int32_t sink_tokens = 0;
  int64_t window_begin = 0;
  // Per-query sparse attention (select mode): row i is position rows[i] (ascending); null = the mapping above.
  const int32_t* rows = nullptr;
  const float* row_bias = nullptr;  // added to the scores of rows [0, num_bias_rows) (merged summaries)
  int32_t num_bias_rows = 0;
  std::optional<KvDtype> v_dtype = std::nullopt;  // values' dtype where it differs from the keys' (asymmetric bits)
  KvDtype value_dtype() const { return v_dtype.value_or(dtype); }
  int64_t position(int64_t t) const {
    if (rows) return rows[t];
    return t < sink_tokens ? t : window_begin + (t - sink_tokens);
  }
  // Rows are positions [0, n), page after page (the kernels' paged walks); else they are remapped.
  bool contiguous() const { return sink_tokens == 0 && window_begin == 0 && rows == nullptr; }
  // The storage slot of position p (its block's id x block_size + its offset); a shift for the usual power-of-two
  // block sizes (an integer division per row cost remapped walks more than the row's arithmetic).
  int64_t slot_of(int64_t p) const {
    if ((block_size & (block_size - 1)) == 0) {
      const int s = __builtin_ctz(static_cast<unsigned>(block_size));
      return (static_cast<int64_t>(block_ids[p >> s]) << s) + (p & (block_size - 1));
    }
    return static_cast<int64_t>(block_ids[p / block_size]) * block_size + p % block_size;
  }
  const uint8_t* k_row(int64_t t) const { return k_base + slot_of(position(t)) * k_row_bytes; }
  // The page (block) holding row t's key record, and t's row within it (a select index's pages: index_page.h).
  const uint8_t* k_page(int64_t t, int32_t* row) const {
    const int64_t s = slot_of(position(t));
    *row = static_cast<int32_t>(s % block_size);
    return k_base + (s - *row) * k_row_bytes;
  }
  const uint8_t* v_row(int64_t t) const { return v_base + slot_of(position(t)) * v_row_bytes; }
  const float* k_row_f32(int64_t t) const { return reinterpret_cast<const float*>(k_row(t)); }
  // Brings the page holding row t (this head's block_size rows) towards the cache ahead of use: pages sit at
  // scattered addresses, so the hardware prefetcher cannot guess the next one. No-op past num_ctx.
  void prefetch_k_page(int64_t t, int64_t num_ctx) const { prefetch(t, num_ctx, true); }
  void prefetch_v_page(int64_t t, int64_t num_ctx) const { prefetch(t, num_ctx, false); }
  void prefetch(int64_t t, int64_t num_ctx, bool key) const {
    if (t >= num_ctx || !contiguous()) return;
    const uint8_t* p = key ? k_row(t - t % block_size) : v_row(t - t % block_size);
    const int64_t bytes = block_size * (key ? k_row_bytes : v_row_bytes);
    for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o, 0, 3);
  }
  const float* v_row_f32(int64_t t) const { return reinterpret_cast<const float*>(v_row(t)); }
};

struct DotKernels {
  // sum_i a[i] * b[i], n elements
  float (*f32)(const float* a, const float* b, int64_t n);
  // sum_i half(a[i]) * b[i]
  float (*f16_f32)(const uint16_t* a, const float* b, int64_t n);
  // Q8_0 weights x Q8_0-quantized activations, num_blocks blocks of 32
  float (*q8_0_q8_0)(const Q8_0Block* a, const Q8_0Block* b, int64_t num_blocks);
  // Q4_0 weights x Q8_0-quantized activations
  float (*q4_0_q8_0)(const Q4_0Block* a, const Q8_0Block* b, int64_t num_blocks);
  // x[n] -> n/32 Q8_0 blocks (n % 32 == 0): d = max|x| / 127, q = round(x / d)
  void (*quantize_q8_0)(const float* x, Q8_0Block* out, int64_t n);
  // y[i] += a * x[i]
  void (*axpy)(float a, const float* x, float* y, int64_t n);
  // One query head over num_ctx cached tokens in pages: out[v_dim] = softmax(q[k_dim]·K^T * scale) · V.
  // scores: scratch of num_ctx floats.
  void (*attend)(const float* q, const PagedKv& kv, int64_t num_ctx, float scale, float* scores, float* out);
  // num_q (<= kMaxAttendGroup) query heads sharing one KV head (GQA) over the same rows: q [num_q, q_stride],
  // scores [num_q, scores_stride] scratch, out [num_q, out_stride]. Each head's out equals attend() for it, bit for
  // bit; the optimised kernels read each K/V page from memory once for the whole group.
  void (*attend_group)(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t num_ctx,
                       float scale, float* scores, int64_t scores_stride, float* out, int64_t out_stride);
  // Optional blocked matmul (null = matmul falls back to one dot per (row, token)):
  // y[t * ldy + r] = W[r] · x[t] for r < rows, t < num_tokens. W: `rows` rows of `cols` elements of w_dtype,
  // contiguous. x: f32 [num_tokens, cols] for F32/F16 weights; Q8_0 blocks [num_tokens, cols/32] for Q8_0/Q4_0.
  bool (*gemm)(DType w_dtype, const void* w, int64_t rows, int64_t cols, const void* x, int64_t num_tokens,
               float* y, int64_t ldy);  // returns false when it does not handle this dtype
  // Optional matmul over panel-packed F32 weights (matmul.h), rows [r0, r1) (r0 a multiple of 16), all tokens:
  // y[t * w.rows + r]. Must equal the scalar fma chain bit for bit. Null/false = scalar reference.
  bool (*gemm_panels)(const WeightView& w, const float* x, int64_t num_tokens, float* y, int64_t r0, int64_t r1);
  // Optional matmul over Q4_0 / Q8_0 panels (matmul.h's Q4_0Panel, Q8_0Panel), rows [r0, r1), x: Q8_0 blocks
  // [num_tokens, cols / 32]. Each (row, token) accumulates its blocks in order whatever the tile (batched ==
  // single); the scalar reference is matmul_quant_panels_ref. Null/false = that reference.
  // xcorr: quant_panel_terms of x (the weights' offset x each activation block's sum), computed once per matmul.
  bool (*gemm_quant_panels)(const WeightView& w, const Q8_0Block* x, const int32_t* xcorr, int64_t num_tokens,
                            float* y, int64_t r0, int64_t r1) = nullptr;
  // Optional matmul over Q4_K / Q5_K / Q6_K / IQ4_XS panels (kquant_panels.h), rows [r0, r1), x: Q8_K blocks
  // [num_tokens, cols / 256], terms: kquant_panel_terms of x. Reference: matmul_kquant_panels_ref, bit for bit.
  bool (*gemm_kquant_panels)(const WeightView& w, const Q8_KBlock* x, const int32_t* terms, int64_t num_tokens,
                             float* y, int64_t r0, int64_t r1) = nullptr;
  // Optional x[n] -> n / 256 Q8_K blocks, bit-identical to the reference quantizer (null = that reference).
  void (*quantize_q8_k)(const float* x, Q8_KBlock* out, int64_t n) = nullptr;
  // Optional select-mode scores q[h] . key row j for rows [begin, end) of kv (the oracle: row_select.h's
  // score_key_rows is the reference; the query may be rounded to kv_codec.h's 12-bit grid, as attention's is).
  // False where it does not apply (null / false = that reference).
  bool (*score_rows)(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t begin, int64_t end,
                     float* scores, int64_t s_stride) = nullptr;
  // Optional select-mode sketch scores q_lat[h] . index row j for rows [begin, end) of an index stored in pages by
  // columns (index_page.h), rank values per row; the query rounded to kv_codec.h's grid. Reference:
  // row_select.h's score_sketch_rows (float: equal to 1e-5 relative). False where it does not apply.
  bool (*score_index)(const float* q_lat, int32_t num_q, int32_t rank, const PagedKv& index, int64_t begin,
                      int64_t end, float* scores, int64_t s_stride) = nullptr;
  // Optional fixed-budget row choice from each head's scores [num_q, s_stride]: row_select.h's combine_heads (max)
  // then pick_rows, the same rows (null = those references). keys: [num_ctx] scratch.
  int64_t (*pick_top_rows)(const float* scores, int32_t num_q, int64_t s_stride, int64_t num_ctx, int64_t sinks,
                           int64_t window_begin, float scale, int64_t budget, int32_t* rows, uint32_t* keys) = nullptr;
  // Optional tiled prefill attention (attention_tile.h): a tile of query rows over positions [begin, end) of a
  // contiguous store, the online softmax's state carried in st. False where it does not apply (null / false = the
  // scalar reference attend_tile_ref, equal within summation order).
  bool (*attend_tile)(const AttendTile& tile, const PagedKv& kv, int64_t begin, int64_t end, float scale,
                      TileState& st) = nullptr;
};

const DotKernels& dot_kernels(Isa isa);
inline const DotKernels& dot_kernels() { return dot_kernels(active_isa()); }

// Per-ISA tables (defined in cpu_scalar.cpp, cpu_avx2/, cpu_avx512/).
extern const DotKernels kScalarDot;
extern const DotKernels kAvx2Dot;
extern const DotKernels kAvx512Dot;

}  // namespace slimkv
