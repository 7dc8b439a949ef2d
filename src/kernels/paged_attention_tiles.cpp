// PagedAttention's tiled prefill: a sequence's consecutive query tokens in a step, with the heads of one KV head,
// attend as one tile (attention_tile.h) — each kv tile of its pages decoded once for all of them, the residual
// window's rows joined by the same online softmax, sinks and windows per row. Owns: the tiles and the per-row glue
// (query transforms, ranges, the final normalisation); the kernels own the walk.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/kv_codec.h"
#include "kernels/paged_attention.h"

namespace slimkv {

bool prefill_tiles_default() {
  static const bool on = [] {
    const char* env = std::getenv("SLIMKV_PREFILL_TILES");
    return env == nullptr || std::string(env) != "0";
  }();
  return on;
}

void PagedAttention::plan_tiles(const LayerKv& layer, const AttentionDims& dims, bool tiles_on, int32_t tile_tokens,
                                int32_t num_threads) {
  const PagedBatchMeta& m = *meta_;
  const int32_t T = static_cast<int32_t>(m.token_pos.size());
  tiles_.clear();
  single_tokens_.clear();
  for (int32_t t = 0; t < T;) {
    int32_t e = t + 1;  // a run: one sequence's consecutive positions
    while (e < T && m.token_seq[e] == m.token_seq[t] && m.token_pos[e] == m.token_pos[e - 1] + 1) ++e;
    const size_t seq = static_cast<size_t>(m.token_seq[t]);
    const bool one_by_one = seq < m.seq_query_by_query.size() && m.seq_query_by_query[seq];
    if (tiles_on && !one_by_one && e - t >= min_tile_tokens_) {
      for (int32_t a = t; a < e; a += tile_tokens) tiles_.push_back({a, std::min(tile_tokens, e - a)});
    } else {
      for (int32_t a = t; a < e; ++a) single_tokens_.push_back(a);
    }
    t = e;
  }
  if (tiles_.empty()) return;
  const int64_t kd = std::max(layer.k_dim, dims.head_dim_k), vd = std::max(layer.v_dim, dims.head_dim_v);
  // queries [rows, kd], accumulators [rows, vd], m, l, per-row ranges (3 x rows as int64), the kernel's scratch
  tile_floats_ = kMaxTileQueryRows * (kd + vd + 2 + 6) + tile_scratch_floats(layer.k_dim, layer.v_dim, m.block_size);
  tile_floats_ = (tile_floats_ + 15) / 16 * 16;
  const size_t need = static_cast<size_t>(tile_floats_) * std::max(num_threads, 1);
  if (tile_buf_.size() < need) tile_buf_.resize(need);
}

void PagedAttention::run_tile(int64_t tile, int32_t kvh, int32_t h0, int32_t num_q, const float* q,
                              const LayerKv& layer, const AttentionDims& dims, const DotKernels& k, float scale,
                              float* out, int32_t thread) {
  const PagedBatchMeta& m = *meta_;
  const TokenTile& tt = tiles_[tile];
  const int32_t nh = dims.num_heads, hd = dims.head_dim_k, hdv = dims.head_dim_v;
  const int32_t kd = layer.k_dim, vd = layer.v_dim, R = tt.tokens * num_q, s = m.token_seq[tt.t0];
  const int64_t kd_max = std::max(kd, hd), vd_max = std::max(vd, hdv);
  float* buf = tile_buf_.data() + static_cast<size_t>(thread) * tile_floats_;
  float* qt = buf;                                   // [R, kd_max] queries in the stored basis
  float* acc = qt + kMaxTileQueryRows * kd_max;      // [R, vd_max] running sums of p v
  float* row_m = acc + kMaxTileQueryRows * vd_max;   // [R]
  float* row_l = row_m + kMaxTileQueryRows;          // [R]
  int64_t* lo = reinterpret_cast<int64_t*>(row_l + kMaxTileQueryRows);  // [R] (two floats each)
  int64_t* hi = lo + kMaxTileQueryRows;              // [R]
  int32_t* sink = reinterpret_cast<int32_t*>(hi + kMaxTileQueryRows);   // [R]
  float* scratch = reinterpret_cast<float*>(sink + 2 * kMaxTileQueryRows);
  const bool grid_q = kv_dtype_has_integer_codes(layer.dtype) && layer.k_split == 0;
  int64_t ctx[kMaxTileQueryRows];  // rows each token's query sees (its position + 1)
  for (int32_t r = 0; r < R; ++r) {  // row r: token tt.t0 + r / num_q, head h0 + r % num_q
    const int32_t t = tt.t0 + r / num_q, h = h0 + r % num_q;
    const float* src = q + (static_cast<int64_t>(t) * nh + h) * hd;
    float* dst = qt + r * kd_max;
    if (layer.k_proj) {  // score in the latent space: (P q)·(P k) = q·(PᵀP k)
      const float* p = layer.k_proj + static_cast<int64_t>(kvh) * kd * hd;
      for (int32_t i = 0; i < kd; ++i) dst[i] = k.f32(p + static_cast<int64_t>(i) * hd, src, hd);
    } else {
      std::copy(src, src + hd, dst);
    }
    if (layer.rotate) hadamard_rotate_record(dst, kd, layer.k_split);  // (Hq)·(Hk) = q·k
    if (grid_q) round_query_to_grid(dst, kd);
    ctx[r] = m.token_pos[t] + 1;
    sink[r] = 0, lo[r] = 0, hi[r] = ctx[r];
    if (layer.window_tokens > 0 && ctx[r] > layer.sink_tokens + layer.window_tokens) {
      sink[r] = layer.sink_tokens, lo[r] = ctx[r] - layer.window_tokens;
    }
    if (layer.residual) hi[r] = residual_begin(ctx[r], layer.residual->tokens, m.block_size);
  }
  TileState st{row_m, row_l, acc, vd_max, scratch};
  tile_state_reset(st, R, vd);
  const AttendTile at{qt, kd_max, R, sink, lo, hi};
  const PagedKv kv = head_kv(layer, kvh, m, s);
  const int64_t end = *std::max_element(hi, hi + R);
  if (!k.attend_tile(at, kv, 0, end, scale, st)) attend_tile_ref(at, kv, 0, end, scale, st);
  if (layer.residual) {  // the window's rows, from its own records and table, into the same running softmax
    const PagedKv rk = residual_view(kv, *layer.residual, kvh, s, 0);
    for (int32_t r = 0; r < R; ++r) lo[r] = hi[r], hi[r] = ctx[r];
    const int64_t begin = *std::min_element(lo, lo + R), rend = *std::max_element(hi, hi + R);
    const AttendTile rt{qt, kd_max, R, nullptr, lo, hi};
    if (!k.attend_tile(rt, rk, begin, rend, scale, st)) attend_tile_ref(rt, rk, begin, rend, scale, st);
  }
  ReadStats& rs = thread_read_[thread];
  const double f16_row_bytes = 2.0 * (dims.head_dim_k + dims.head_dim_v);
  const double main_bytes = layer.k_head_bytes + (layer.v == layer.k ? 0 : layer.v_head_bytes);
  for (int32_t r = 0; r < R; ++r) {
    const int32_t h = h0 + r % num_q;
    float* o = acc + r * vd_max;
    double total = row_l[r];
    if (dims.sinks) total += std::exp(static_cast<double>(dims.sinks[h]) - row_m[r]);
    const float inv = static_cast<float>(1.0 / total);
    for (int32_t d = 0; d < vd; ++d) o[d] *= inv;
    if (layer.rotate) hadamard_unrotate(o, vd);  // sum_t p_t (H v_t) = H (sum_t p_t v_t)
    float* dst = out + (static_cast<int64_t>(tt.t0 + r / num_q) * nh + h) * hdv;
    if (layer.v_proj) {  // back from the latent space once: out = Pᵀ (sum_t p_t P v_t)
      const float* p = layer.v_proj + static_cast<int64_t>(kvh) * vd * hdv;
      std::fill(dst, dst + hdv, 0.0f);
      for (int32_t i = 0; i < vd; ++i) k.axpy(o[i], p + static_cast<int64_t>(i) * hdv, dst, hdv);
    } else {
      std::copy(o, o + hdv, dst);
    }
    if (r % num_q != 0) continue;  // what the walk read, once per (token, KV head) as the single walks count it
    // (with a residual window lo / hi are now the window's rows, and every row is read; else sinks and [lo, hi))
    const int64_t rows = layer.residual ? ctx[r] : sink[r] + hi[r] - lo[r];
    const int64_t recent = layer.residual ? hi[r] - lo[r] : 0;
    rs.items += 1;
    rs.read_fraction_sum += static_cast<double>(rows) / static_cast<double>(ctx[r]);
    rs.rows_read += rows;
    rs.rows_visible += ctx[r];
    rs.bytes_read += static_cast<double>(rows - recent) * main_bytes;
    if (layer.residual) rs.bytes_read += static_cast<double>(recent) * (layer.residual->k_head_bytes + layer.residual->v_head_bytes);
    rs.f16_bytes += static_cast<double>(ctx[r]) * f16_row_bytes;
  }
}

}  // namespace slimkv
