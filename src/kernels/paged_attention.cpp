#include "kernels/paged_attention.h"

#include <algorithm>
#include <cmath>

#include <chrono>

#include "core/check.h"
#include "core/profiler.h"
#include "kernels/kv_codec.h"

namespace slimkv {
namespace {

// The kernels leave e_t = exp(s_t - m) in scores and do not return m: it is recovered from the largest e_t (whose
// e is ~1) as m = s_t* - log(e_t*), s_t* recomputed from the stored key. Returns m; *z = sum_t e_t.
// The scan keeps kLanes independent sums and maxima (a scalar chain of dependent double adds cost ~4 cycles per
// score: at 16K context, about 2 ms per decode step over all heads); ties go to the earliest row, as a plain scan's.
constexpr int64_t kLanes = 8;

int64_t sum_and_argmax(const float* e, int64_t num_ctx, double* z) {
  double sum[kLanes] = {};
  float top[kLanes];
  int64_t at[kLanes];
  for (int64_t j = 0; j < kLanes; ++j) top[j] = -INFINITY, at[j] = j;
  const int64_t whole = num_ctx / kLanes * kLanes;
  for (int64_t t = 0; t < whole; t += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) {
      sum[j] += e[t + j];
      if (e[t + j] > top[j]) top[j] = e[t + j], at[j] = t + j;
    }
  }
  double total = 0;
  for (int64_t j = 0; j < kLanes; ++j) total += sum[j];
  int64_t best = 0;
  float best_e = -INFINITY;
  for (int64_t j = 0; j < kLanes && whole > 0; ++j) {
    if (top[j] > best_e || (top[j] == best_e && at[j] < best)) best_e = top[j], best = at[j];
  }
  for (int64_t t = whole; t < num_ctx; ++t) {
    total += e[t];
    if (e[t] > best_e) best_e = e[t], best = t;
  }
  *z = total;
  return best;
}

double recovered_max(const float* e, int64_t num_ctx, const float* q, const PagedKv& kv, float scale, double* z) {
  const int64_t best = sum_and_argmax(e, num_ctx, z);
  float key[1024];  // one decoded key record (head sizes <= 1024, checked by run)
  decode_kv_record(kv.k_row(best), kv.k_dim, kv.k_split, kv.dtype, key);
  double s = 0;
  for (int32_t d = 0; d < kv.k_dim; ++d) s += static_cast<double>(q[d]) * key[d];
  s = s * scale + (best < kv.num_bias_rows ? kv.row_bias[best] : 0.0f);
  return s - std::log(static_cast<double>(e[best]));
}

// An attention sink joins one head's softmax denominator: out = sum_t e_t v_t / (Z + exp(sink - m)) where the
// kernel left e_t = exp(s_t - m) in scores and out = sum_t e_t v_t / Z.
void scale_for_sink(float* out, int32_t v_dim, const float* e, int64_t num_ctx, const float* q, const PagedKv& kv,
                    float scale, float sink) {
  if (num_ctx == 0) return;
  double z = 0;
  const double m = recovered_max(e, num_ctx, q, kv, scale, &z);
  const float f = static_cast<float>(z / (z + std::exp(static_cast<double>(sink) - m)));
  for (int32_t d = 0; d < v_dim; ++d) out[d] *= f;
}

// Attention over rows [0, older) of kv and [older, older + recent) of recent_kv (a residual window), for num_q query
// heads: each walk's output is weighted by its share of the softmax denominator (and an attention sink's joins it:
// sinks [num_q] or null). scores: [num_q, s_stride] scratch; recent_out: [num_q, 1024] scratch; o: [num_q, o_stride].
void attend_with_residual(const DotKernels& k, const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv,
                          const PagedKv& recent_kv, int64_t older, int64_t recent, float scale, const float* sinks,
                          float* scores, int64_t s_stride, float* recent_out, float* o, int64_t o_stride,
                          int32_t v_dim) {
  k.attend_group(q, num_q, q_stride, recent_kv, recent, scale, scores, s_stride, recent_out, 1024);
  double m_rec[kMaxAttendGroup], z_rec[kMaxAttendGroup];
  for (int32_t g = 0; g < num_q; ++g) {
    m_rec[g] = recovered_max(scores + g * s_stride, recent, q + g * q_stride, recent_kv, scale, &z_rec[g]);
  }
  if (older > 0) k.attend_group(q, num_q, q_stride, kv, older, scale, scores, s_stride, o, o_stride);
  for (int32_t g = 0; g < num_q; ++g) {
    double z_old = 0, m_old = -INFINITY;
    if (older > 0) m_old = recovered_max(scores + g * s_stride, older, q + g * q_stride, kv, scale, &z_old);
    const double top = std::max(m_old, m_rec[g]);
    const double w_old = older > 0 ? z_old * std::exp(m_old - top) : 0.0;
    const double w_rec = z_rec[g] * std::exp(m_rec[g] - top);
    const double total = w_old + w_rec + (sinks ? std::exp(static_cast<double>(sinks[g]) - top) : 0.0);
    const float a = static_cast<float>(w_old / total), b = static_cast<float>(w_rec / total);
    float* og = o + g * o_stride;
    const float* rg = recent_out + g * 1024;
    for (int32_t d = 0; d < v_dim; ++d) og[d] = (older > 0 ? a * og[d] : 0.0f) + b * rg[d];
  }
}

}  // namespace

// The same KV head's rows [older, num_ctx) in the residual window's records, as pages from block older / bs on
// (older is a block boundary; 0: the window's table indexed by absolute position, as the tiles read it).
PagedKv PagedAttention::residual_view(const PagedKv& main, const LayerKv::Residual& r, int32_t kv_head, int32_t seq,
                                      int64_t older) {
  PagedKv rk = main;
  rk.k_base = r.k + static_cast<int64_t>(kv_head) * r.k_head_stride_bytes;
  rk.v_base = r.v + static_cast<int64_t>(kv_head) * r.v_head_stride_bytes;
  rk.block_ids = r.meta->kv_indices.data() + r.meta->kv_indptr[seq] + older / main.block_size;
  rk.k_row_bytes = r.k_head_bytes;
  rk.v_row_bytes = r.v_head_bytes;
  rk.dtype = r.dtype;
  rk.v_dtype = std::nullopt;
  rk.sink_tokens = 0;
  rk.window_begin = 0;
  return rk;
}

PagedKv PagedAttention::head_kv(const LayerKv& layer, int32_t kvh, const PagedBatchMeta& m, int32_t seq) {
  PagedKv kv;  // one plane per KV head (kv/kv_storage.h): this head's rows, slot after slot
  kv.k_base = layer.k + static_cast<int64_t>(kvh) * layer.k_head_stride_bytes;
  kv.v_base = layer.v + static_cast<int64_t>(kvh) * layer.v_head_stride_bytes;
  kv.block_ids = m.kv_indices.data() + m.kv_indptr[seq];
  kv.block_size = m.block_size;
  kv.k_row_bytes = layer.k_head_bytes;
  kv.v_row_bytes = layer.v_head_bytes;
  kv.dtype = layer.dtype;
  kv.v_dtype = layer.v_dtype;
  kv.k_dim = layer.k_dim;
  kv.v_dim = layer.v_dim;
  kv.k_split = layer.k_split;
  return kv;
}

void PagedAttention::plan(const PagedBatchMeta& meta, int32_t max_group, int32_t num_threads) {
  SLIMKV_CHECK(meta.token_seq.size() == meta.token_pos.size(), "paged attention: token arrays differ in length");
  SLIMKV_CHECK(max_group >= 1, "paged attention: bad GQA group {}", max_group);
  meta_ = &meta;
  max_ctx_ = 0;
  ctx_sum_ = 0;
  for (size_t t = 0; t < meta.token_pos.size(); ++t) {
    const int32_t s = meta.token_seq[t], ctx = meta.token_ctx.empty() ? meta.token_pos[t] + 1 : meta.token_ctx[t];
    SLIMKV_CHECK(s >= 0 && s + 1 < static_cast<int32_t>(meta.kv_indptr.size()), "paged attention: bad sequence index");
    const int64_t pages = meta.kv_indptr[s + 1] - meta.kv_indptr[s];
    SLIMKV_CHECK(ctx <= pages * meta.block_size, "paged attention: position {} beyond the sequence's {} pages",
                 ctx - 1, pages);
    max_ctx_ = std::max(max_ctx_, ctx);
    ctx_sum_ += ctx;
  }
  max_chunk_ = std::min(max_group, kMaxAttendGroup);
  const size_t threads = static_cast<size_t>(std::max(num_threads, 1));
  const size_t need = threads * max_chunk_ * std::max(max_ctx_, 1);
  if (scores_.size() < need) scores_.resize(need);
  if (qbuf_.size() < threads * max_chunk_ * 1024) {
    qbuf_.resize(threads * max_chunk_ * 1024);
    latbuf_.resize(threads * max_chunk_ * 1024);
    recent_out_.resize(threads * max_chunk_ * 1024);
  }
  page_importance_.assign(meta.kv_indices.size(), 0.0);
  // a verify chunk's tracked rows keep their mass row by row (only the accepted rows' count, each as a decode step's)
  row_importance_at_.assign(meta.token_pos.size(), -1);
  int64_t rows = 0;
  if (!meta.token_track.empty() && !meta.seq_query_by_query.empty()) {
    for (size_t t = 0; t < meta.token_pos.size(); ++t) {
      const int32_t s = meta.token_seq[t];
      if (!meta.token_track[t] || !meta.seq_query_by_query[s]) continue;
      row_importance_at_[t] = rows;
      rows += meta.kv_indptr[s + 1] - meta.kv_indptr[s];
    }
  }
  row_importance_.assign(static_cast<size_t>(rows), 0.0);
}

void PagedAttention::run(const float* q, const LayerKv& layer, const AttentionDims& dims, float* out, ThreadPool* pool,
                         Isa isa) {
  const PagedBatchMeta& m = *meta_;
  SLIMKV_CHECK(dims.num_kv_heads > 0 && dims.num_heads % dims.num_kv_heads == 0, "paged attention: bad head counts");
  SLIMKV_CHECK(dims.head_dim_k <= 1024 && dims.head_dim_v <= 1024 && layer.k_dim <= 1024 && layer.v_dim <= 1024,
               "paged attention: head sizes above 1024 are not supported");
  const int32_t nh = dims.num_heads, hd = dims.head_dim_k, hdv = dims.head_dim_v;
  const int32_t group = dims.num_heads / dims.num_kv_heads;
  SLIMKV_CHECK(std::min(group, kMaxAttendGroup) <= max_chunk_, "paged attention: plan() for a smaller GQA group");
  const float scale = dims.scale > 0 ? dims.scale : 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t work = ctx_sum_ * hd * nh;  // multiply-adds, to decide whether threads pay
  if (!m.token_track.empty()) {
    const size_t p = m.token_pos.size() * nh * static_cast<size_t>(std::max(max_ctx_, 1));
    if (probs_.size() < p) probs_.resize(p);
  }
  const DotKernels& k = dot_kernels(isa);
  const size_t threads = static_cast<size_t>(pool ? std::max(pool->num_threads(), 1) : 1);
  thread_read_.assign(threads, ReadStats{});
  if (layer.select) {
    const size_t ctx = static_cast<size_t>(std::max(max_ctx_, 1));
    if (sel_rows_.size() < threads * 2 * ctx) sel_rows_.resize(threads * 2 * ctx);
    if (sel_scores_.size() < threads * (max_chunk_ + 1) * ctx) sel_scores_.resize(threads * (max_chunk_ + 1) * ctx);
    if (sel_qlat_.size() < threads * max_chunk_ * 256) sel_qlat_.resize(threads * max_chunk_ * 256);
    SLIMKV_CHECK(layer.select->scorer != RowScorer::Sketch || (layer.select->index && layer.select->proj &&
                                                               layer.select->index_meta && layer.select->rank <= 256),
                 "paged attention: a sketch select without its index");
    SLIMKV_CHECK(m.token_track.empty() && layer.window_tokens == 0, "paged attention: select on a retention layer");
  }
  const double f16_row_bytes = 2.0 * (dims.head_dim_k + dims.head_dim_v);
  const bool timing = layer.select && Profiler::active() != nullptr;  // the Indexer's share of this walk
  // Work items: (query token, KV head, chunk of its query heads): a kernel call serves the chunk's heads from one
  // walk over the KV head's pages.
  const int32_t chunk = std::min(group, kMaxAttendGroup), chunks_per_kv = (group + chunk - 1) / chunk;
  // Prefill chunks attend in tiles (paged_attention_tiles.cpp) where the layer reads every row it sees in order.
  const bool summaries = std::find(m.seq_has_summary.begin(), m.seq_has_summary.end(), 1) != m.seq_has_summary.end();
  const bool tiles_on = tiled_ && k.attend_tile != nullptr && !layer.select && m.token_track.empty() && m.token_ctx.empty() &&
                        !summaries && tile_fits(layer.k_dim, layer.v_dim);
  const int32_t tile_heads = std::min(group, kMaxTileQueryRows), tile_chunks = (group + tile_heads - 1) / tile_heads;
  plan_tiles(layer, dims, tiles_on, kMaxTileQueryRows / tile_heads, static_cast<int32_t>(threads));
  const int64_t per_tile = static_cast<int64_t>(dims.num_kv_heads) * tile_chunks;
  const int64_t n_tile_items = static_cast<int64_t>(tiles_.size()) * per_tile;
  const int64_t n = n_tile_items + static_cast<int64_t>(single_tokens_.size()) * dims.num_kv_heads * chunks_per_kv;
  const bool direct_out = !layer.rotate && layer.v_proj == nullptr && !layer.residual;
  SLIMKV_CHECK(!layer.residual || (m.token_track.empty() && layer.window_tokens == 0 && layer.residual->meta),
               "paged attention: a residual window needs a full-attention layer and its group's page tables");
  // Keys with integer codes in one part: the query is scored on the integer grid (kv_codec.h), every ISA alike.
  const bool grid_q = kv_dtype_has_integer_codes(layer.dtype) && layer.k_split == 0;
  const bool transform_q = layer.k_proj != nullptr || layer.rotate || grid_q;
  auto body = [&](int64_t i0, int64_t i1, int32_t thread) {
    float* scores = scores_.data() + static_cast<size_t>(thread) * max_chunk_ * max_ctx_;  // [chunk, max_ctx]
    float* qr = qbuf_.data() + static_cast<size_t>(thread) * max_chunk_ * 1024;  // [chunk, 1024] query, stored basis
    float* lat = latbuf_.data() + static_cast<size_t>(thread) * max_chunk_ * 1024;  // [chunk, 1024] output, stored basis
    for (int64_t i = i0; i < i1; ++i) {
      if (i < n_tile_items) {  // (tile, KV head, chunk of its query heads)
        const int32_t rest = static_cast<int32_t>(i % per_tile), kvh = rest / tile_chunks;
        const int32_t h0 = kvh * group + (rest % tile_chunks) * tile_heads;
        run_tile(i / per_tile, kvh, h0, std::min(tile_heads, (kvh + 1) * group - h0), q, layer, dims, k, scale, out,
                 thread);
        continue;
      }
      const int64_t item = i - n_tile_items;  // (single token, KV head, chunk of its query heads)
      const int64_t t = single_tokens_[item / (static_cast<int64_t>(dims.num_kv_heads) * chunks_per_kv)];
      const int32_t rest = static_cast<int32_t>(item % (static_cast<int64_t>(dims.num_kv_heads) * chunks_per_kv));
      const int32_t kvh = rest / chunks_per_kv, h0 = kvh * group + (rest % chunks_per_kv) * chunk;
      const int32_t num_q = std::min(chunk, (kvh + 1) * group - h0), s = m.token_seq[t];
      PagedKv kv = head_kv(layer, kvh, m, s);
      int64_t num_ctx = m.token_ctx.empty() ? m.token_pos[t] + 1 : m.token_ctx[t];
      if (!m.seq_has_summary.empty() && m.seq_has_summary[s]) {
        kv.row_bias = m.seq_summary_bias.data() + static_cast<size_t>(s) * m.block_size;
        kv.num_bias_rows = m.block_size;
      }
      if (layer.window_tokens > 0 && num_ctx > layer.sink_tokens + layer.window_tokens) {
        kv.sink_tokens = layer.sink_tokens;
        kv.window_begin = num_ctx - layer.window_tokens;
        num_ctx = layer.sink_tokens + layer.window_tokens;
      }
      const int64_t first = t * nh + h0;  // the chunk's first query head in q and out
      const float* qh = q + first * hd;
      int64_t q_stride = hd;
      const int64_t visible = m.token_pos[t] + 1;  // the whole context (retention and windows read less of it)
      if (transform_q) {
        for (int32_t g = 0; g < num_q; ++g) {
          const float* src = q + (first + g) * hd;
          float* dst = qr + static_cast<int64_t>(g) * 1024;
          if (layer.k_proj) {  // score in the latent space: (P q)·(P k) = q·(PᵀP k)
            const float* p = layer.k_proj + static_cast<int64_t>(kvh) * layer.k_dim * hd;
            for (int32_t r = 0; r < layer.k_dim; ++r) dst[r] = k.f32(p + static_cast<int64_t>(r) * hd, src, hd);
          } else {
            std::copy(src, src + hd, dst);
          }
          if (layer.rotate) hadamard_rotate_record(dst, layer.k_dim, layer.k_split);  // (Hq)·(Hk) = q·k
          if (grid_q) round_query_to_grid(dst, layer.k_dim);
        }
        qh = qr;
        q_stride = 1024;
      }
      float* o = direct_out ? out + first * hdv : lat;
      const int64_t o_stride = direct_out ? hdv : 1024;
      const int64_t older = layer.residual ? residual_begin(num_ctx, layer.residual->tokens, m.block_size) : num_ctx;
      ReadStats& rs = thread_read_[thread];
      PagedKv walk = kv;  // select mode: the same rows, remapped to the chosen ones
      int64_t read = num_ctx;
      using SteadyClock = std::chrono::steady_clock;
      const SteadyClock::time_point t_sel = timing ? SteadyClock::now() : SteadyClock::time_point{};
      if (layer.select) {
        const LayerKv::Select& sel = *layer.select;
        const double hscale = sel.head_scale ? sel.head_scale[kvh] : 1.0;  // per-head budgets (auto schedule)
        const int64_t budget =
            select_budget(num_ctx, static_cast<int32_t>(std::lround(sel.topk_tokens * hscale)),
                          std::min(1.0, sel.fraction * hscale), sel.sink_tokens, sel.window_tokens);
        if (budget < num_ctx || (sel.mass > 0 && num_ctx > static_cast<int64_t>(sel.sink_tokens) + sel.window_tokens)) {
          const int64_t wbegin = std::min(num_ctx - sel.window_tokens, older);  // the residual window read whole
          const int64_t sinks = std::min<int64_t>(sel.sink_tokens, std::max<int64_t>(wbegin, 0));
          // Adaptive budgets score every row (the sinks' and window's mass counts); fixed ones only those between.
          const int64_t from = sel.mass > 0 ? 0 : sinks, to = sel.mass > 0 ? num_ctx : wbegin;
          const size_t ctx = static_cast<size_t>(max_ctx_);
          int32_t* rows = sel_rows_.data() + static_cast<size_t>(thread) * 2 * ctx;
          float* hs = sel_scores_.data() + static_cast<size_t>(thread) * (max_chunk_ + 1) * ctx;  // [num_q, ctx]
          float* sc = hs + static_cast<size_t>(max_chunk_) * ctx;  // [ctx] the heads combined
          if (sel.scorer == RowScorer::Sketch) {
            float* ql = sel_qlat_.data() + static_cast<size_t>(thread) * max_chunk_ * 256;  // [num_q, rank]
            const float* p = sel.proj + static_cast<int64_t>(kvh) * sel.rank * hd;
            for (int32_t g = 0; g < num_q; ++g) {
              for (int32_t r = 0; r < sel.rank; ++r) {
                ql[g * sel.rank + r] = k.f32(p + static_cast<int64_t>(r) * hd, q + (first + g) * hd, hd);
              }
              if (sel.index_rotate) hadamard_rotate(ql + g * sel.rank, sel.rank);  // (H P q)·(H P k) = (P q)·(P k)
            }
            PagedKv index = kv;
            index.k_base = sel.index + static_cast<int64_t>(kvh) * sel.index_head_stride_bytes;
            index.block_ids = sel.index_meta->kv_indices.data() + sel.index_meta->kv_indptr[s];
            index.k_row_bytes = sel.index_head_bytes;
            index.dtype = sel.index_dtype;
            index.k_dim = sel.rank;
            index.k_split = 0;
            if (!k.score_index || !k.score_index(ql, num_q, sel.rank, index, from, to, hs, max_ctx_)) {
              score_sketch_rows(ql, num_q, sel.rank, index, from, to, hs, max_ctx_);  // the scalar reference
            }
            rs.index_rows += to - from;
            rs.bytes_read += static_cast<double>(to - from) * sel.index_head_bytes;
          } else if (sel.scorer == RowScorer::Oracle) {
            if (!k.score_rows || !k.score_rows(qh, num_q, q_stride, kv, from, to, hs, max_ctx_)) {
              score_key_rows(qh, num_q, q_stride, kv, from, to, hs, max_ctx_);  // the scalar reference
            }
          } else {
            score_page_bounds(qh, num_q, q_stride, kv, from, to, hs, max_ctx_);
          }
          if (sel.mass > 0) {
            combine_heads(hs, num_q, max_ctx_, from, to, scale, true, sc);
            read = pick_rows_by_mass(sc, num_ctx, sinks, wbegin, sel.mass, budget, rows, rows + ctx);
          } else if (k.pick_top_rows) {
            read = k.pick_top_rows(hs, num_q, max_ctx_, num_ctx, sinks, wbegin, scale, budget, rows,
                                   reinterpret_cast<uint32_t*>(rows + ctx));
          } else {
            combine_heads(hs, num_q, max_ctx_, from, to, scale, false, sc);
            read = pick_rows(sc, num_ctx, sinks, wbegin, budget, rows, rows + ctx);
          }
          walk.rows = rows;
        }
      }
      const SteadyClock::time_point t_walk = timing ? SteadyClock::now() : SteadyClock::time_point{};
      if (timing) rs.select_seconds += std::chrono::duration<double>(t_walk - t_sel).count();
      const int64_t recent = num_ctx - older, main_rows = read - recent;  // the window's rows are the last read
      rs.items += 1;
      rs.read_fraction_sum += static_cast<double>(read) / static_cast<double>(std::max<int64_t>(visible, 1));
      rs.rows_read += read;
      rs.rows_visible += visible;
      rs.bytes_read += static_cast<double>(main_rows) * (layer.k_head_bytes + (layer.v == layer.k ? 0 : layer.v_head_bytes));
      if (layer.residual) rs.bytes_read += static_cast<double>(recent) * (layer.residual->k_head_bytes + layer.residual->v_head_bytes);
      rs.f16_bytes += static_cast<double>(visible) * f16_row_bytes;
      if (layer.residual) {  // two walks (older rows, the window), merged by their softmax denominators
        float* o_rec = recent_out_.data() + static_cast<size_t>(thread) * max_chunk_ * 1024;  // [chunk, 1024]
        attend_with_residual(k, qh, num_q, q_stride, walk, residual_view(kv, *layer.residual, kvh, s, older), main_rows,
                             recent, scale, dims.sinks ? dims.sinks + h0 : nullptr, scores, max_ctx_, o_rec, o,
                             o_stride, layer.v_dim);
      } else {
        k.attend_group(qh, num_q, q_stride, walk, read, scale, scores, max_ctx_, o, o_stride);
      }
      num_ctx = read;  // what the scores below cover
      if (timing) rs.walk_seconds += std::chrono::duration<double>(SteadyClock::now() - t_walk).count();
      for (int32_t g = 0; g < num_q; ++g) {
        const float* sg = scores + static_cast<int64_t>(g) * max_ctx_;
        float* og = o + g * o_stride;
        if (!m.token_track.empty() && m.token_track[t]) {  // scores hold exp(s - max): normalise and keep
          double sum = 0;
          for (int64_t r = 0; r < num_ctx; ++r) sum += sg[r];
          float* pr = probs_.data() + static_cast<size_t>(first + g) * max_ctx_;
          for (int64_t r = 0; r < num_ctx; ++r) pr[r] = static_cast<float>(sg[r] / sum);
        }
        if (dims.sinks && !layer.residual) {  // (the residual walks count the sink when they merge)
          scale_for_sink(og, layer.v_dim, sg, num_ctx, qh + g * q_stride, walk, scale, dims.sinks[h0 + g]);
        }
        if (layer.rotate) hadamard_unrotate(og, layer.v_dim);  // sum_t p_t (H v_t) = H (sum_t p_t v_t)
        float* dst = out + (first + g) * hdv;
        if (layer.v_proj) {  // back from the latent space once: out = Pᵀ (sum_t p_t P v_t)
          const float* p = layer.v_proj + static_cast<int64_t>(kvh) * layer.v_dim * hdv;
          std::fill(dst, dst + hdv, 0.0f);
          for (int32_t r = 0; r < layer.v_dim; ++r) k.axpy(og[r], p + static_cast<int64_t>(r) * hdv, dst, hdv);
        } else if (!direct_out) {
          std::copy(og, og + hdv, dst);
        }
      }
    }
  };
  if (pool == nullptr || work < (1 << 15)) body(0, n, 0);
  else pool->parallel_for(n, 1, body);
  last_read_ = ReadStats{};
  for (const ReadStats& r : thread_read_) last_read_.add(r);
  if (m.token_track.empty()) return;
  for (int64_t i = 0; i < static_cast<int64_t>(m.token_pos.size()) * nh; ++i) {  // fixed order: token, then head
    const int64_t t = i / nh;
    if (!m.token_track[t]) continue;
    const int32_t s = m.token_seq[t];
    const float* pr = probs_.data() + static_cast<size_t>(i) * max_ctx_;
    double* imp = row_importance_at_[t] >= 0 ? row_importance_.data() + row_importance_at_[t]
                                             : page_importance_.data() + m.kv_indptr[s];
    for (int64_t r = 0; r < m.token_ctx[t]; ++r) imp[r / m.block_size] += pr[r];
  }
}

}  // namespace slimkv
