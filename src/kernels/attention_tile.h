// Tiled attention for prefill (FlashAttention-2's online softmax on the CPU): a tile of query rows of one KV head
// (several tokens x the heads of its GQA group) against runs of one paged store's rows, each kv tile's keys and
// values decoded once for every row of the tile. Owns: the tile's plain data, the running state, the kernels'
// contract and the scalar reference (cpu_scalar.cpp). Must not know: batches, layers or how tiles are chosen.
#pragma once
#include <cstdint>

#include "kernels/dot.h"

namespace slimkv {

// Rows of one kv tile: aligned runs of kKvTileRows positions (or one page, where pages are larger). The alignment is
// absolute, so a query row meets the same kv tiles, in the same order, whatever tile of queries it is in.
inline constexpr int32_t kKvTileRows = 64;
// The most query rows one tile holds (tokens x heads of one KV head): its scratch stays in L1 / L2.
inline constexpr int32_t kMaxTileQueryRows = 64;
// Head sizes the tile kernels take (stored record sizes: keys <= 1024 values, values <= 1024 and a multiple of 8).
inline constexpr int32_t kMaxTileHeadDim = 1024;

struct AttendTile {      // plain data: one tile's query rows and what each sees
  const float* q = nullptr;  // [num_rows, q_stride] queries in the stored basis (k_dim values used)
  int64_t q_stride = 0;
  int32_t num_rows = 0;  // <= kMaxTileQueryRows
  // Row r sees positions [0, sink[r]) and [lo[r], hi[r]) of the store (sink[r] <= lo[r]; an empty range: none).
  const int32_t* sink = nullptr;  // [num_rows] or null (no sinks)
  const int64_t* lo = nullptr;    // [num_rows]
  const int64_t* hi = nullptr;    // [num_rows]
};

struct TileState {       // the online softmax's running state, carried across calls (e.g. a residual window's walk)
  float* m = nullptr;    // [num_rows] running max of the scaled scores (-inf: nothing seen yet)
  float* l = nullptr;    // [num_rows] running sum of exp(s - m)
  float* acc = nullptr;  // [num_rows, acc_stride] running sum of exp(s - m) * v (v_dim values)
  int64_t acc_stride = 0;
  float* scratch = nullptr;  // tile_scratch_floats(k_dim, v_dim, block_size) floats, the kernel's
};

// Floats of scratch one attend_tile call needs for these stored sizes.
int64_t tile_scratch_floats(int32_t k_dim, int32_t v_dim, int32_t block_size);
// The kv tile size for a page size: kKvTileRows, or the page where pages are larger.
inline int32_t kv_tile_rows(int32_t block_size) { return block_size > kKvTileRows ? block_size : kKvTileRows; }
// Whether the tile kernels take these stored sizes (else the caller walks query by query).
inline bool tile_fits(int32_t k_dim, int32_t v_dim) {
  return k_dim > 0 && v_dim > 0 && k_dim <= kMaxTileHeadDim && v_dim <= kMaxTileHeadDim && v_dim % 8 == 0;
}
// Initial state: m = -inf, l = 0, acc = 0 for num_rows rows of v_dim values.
void tile_state_reset(TileState& st, int32_t num_rows, int32_t v_dim);

// The scalar reference: for each row, every visible position of [begin, end) of kv (a contiguous store: position p's
// record at kv.k_row(p)) joins its running softmax one kv tile at a time — scores q·k * scale (+ nothing else: no row
// biases, no remapped rows), m and l updated, acc rescaled and the tile's exp(s - m) * v added. A row that sees
// nothing of a kv tile is left untouched there.
void attend_tile_ref(const AttendTile& tile, const PagedKv& kv, int64_t begin, int64_t end, float scale,
                     TileState& st);

}  // namespace slimkv
