// Per-query sparse attention's choice of rows (select mode): one query's KV head scores the rows of its context by an
// index — a calibrated low-rank sketch of each key (sketch), the stored keys themselves (oracle: eval only), or
// Quest's per-page bounds over them (pages: eval only) — and reads its sinks, its recent window and the top-scored
// rows between, up to a budget. Scalar code, a reference beside which faster kernels are checked.
// Must not know: requests, layers or how the index was written.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/dot.h"

namespace slimkv {

enum class RowScorer : uint8_t { Sketch, Oracle, Pages };

// How many rows a query over num_ctx rows reads: ceil(fraction x num_ctx) when fraction > 0, else topk_tokens;
// never fewer than its sinks and window, never more than num_ctx.
int64_t select_budget(int64_t num_ctx, int32_t topk_tokens, double fraction, int32_t sink_tokens, int32_t window_tokens);

// The fixed part of a fixed-budget choice over num_ctx rows: the sinks and the window's start clamped, the rows
// between, and how many of them to take (all, none, or some: those the caller ranks highest).
struct RowChoice {
  int64_t sinks, window_begin, between, take;
  RowChoice(int64_t num_ctx, int64_t sink_rows, int64_t window_start, int64_t budget) {
    sinks = std::min(sink_rows, num_ctx);
    window_begin = std::clamp(window_start, sinks, num_ctx);
    between = window_begin - sinks;
    take = std::clamp<int64_t>(budget - sinks - (num_ctx - window_begin), 0, between);
  }
  bool all() const { return take == between; }
};
// Appends rows [from, to) to rows[0, n); returns the new count.
inline int64_t append_rows(int32_t* rows, int64_t n, int64_t from, int64_t to) {
  for (int64_t j = from; j < to; ++j) rows[n++] = static_cast<int32_t>(j);
  return n;
}

// The rows read, ascending, into rows: [0, sinks) ∪ the (budget - sinks - (num_ctx - window_begin)) rows of
// [sinks, window_begin) with the highest scores (ties: the earlier row) ∪ [window_begin, num_ctx). scores: [num_ctx],
// read only in [sinks, window_begin). order: [num_ctx] scratch. Returns the count. Deterministic: the same rows
// whatever the threads or batch.
int64_t pick_rows(const float* scores, int64_t num_ctx, int64_t sinks, int64_t window_begin, int64_t budget,
                  int32_t* rows, int32_t* order);

// Adaptive budgets (top-p): probs [num_ctx] an estimated attention distribution over every row (summing to 1),
// the sinks, the window and the fewest most probable rows between whose mass, with the sinks' and window's,
// reaches `mass`, and at most max_budget rows in all. The same order and ties as pick_rows.
int64_t pick_rows_by_mass(const float* probs, int64_t num_ctx, int64_t sinks, int64_t window_begin, double mass,
                          int64_t max_budget, int32_t* rows, int32_t* order);

// The heads of a KV head's group as one ranking of rows [begin, end), from each head's scores (logits once
// multiplied by scale; scores [num_q, s_stride]): mean — the heads' softmax probabilities averaged (an estimated
// attention distribution, for pick_rows_by_mass); else the largest over heads of scale x (score - the head's best):
// the row some head needs most, for pick_rows (no exponentials).
void combine_heads(const float* scores, int32_t num_q, int64_t s_stride, int64_t begin, int64_t end, float scale,
                   bool mean, float* out);

// Each head's score of rows [begin, end) into scores[h * s_stride + j]:
// Sketch: q_lat[h] . decode(index row j), the index rows records of `rank` values in index.dtype, stored in pages
// by columns (index_page.h; k_page gives j's page);
// q_lat: [num_q, rank] the queries' sketches (P q).
void score_sketch_rows(const float* q_lat, int32_t num_q, int32_t rank, const PagedKv& index, int64_t begin,
                       int64_t end, float* scores, int64_t s_stride);
// Oracle: q[h] . decode(key row j) in the stored basis (the attention's own logits up to its scale). q: [num_q,
// q_stride].
void score_key_rows(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t begin, int64_t end,
                    float* scores, int64_t s_stride);
// Quest's bounds: each page's rows in [begin, end) get the page's upper bound sum_d max(q_d min_d, q_d max_d),
// min / max over the page's rows of [begin, end).
void score_page_bounds(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t begin, int64_t end,
                       float* scores, int64_t s_stride);

}  // namespace slimkv
