#include "engine/embedding_pool.h"

#include "core/check.h"

namespace slimkv {
namespace {

// Whether the token at prompt position `pos` of r is pooled in this step. Mean: every position not pooled yet (a
// chunk starts at or before r.pooled_tokens: Mean takes no prefix hit; after a preemption the recomputed positions
// are skipped). First / Last: their one position, once.
bool keeps(const Request& r, int32_t pos) {
  if (pos >= r.num_prompt_tokens) return false;
  switch (r.params.pooling) {
    case Pooling::Mean: return pos >= r.pooled_tokens;
    case Pooling::First: return pos == 0 && r.pooled_tokens == 0;
    case Pooling::Last: return pos == r.num_prompt_tokens - 1 && r.pooled_tokens == 0;
    default: return false;
  }
}

}  // namespace

PooledRows plan_pooled_rows(const SchedOutput& out, Scheduler& sched, ForwardBatch& batch) {
  PooledRows rows;
  batch.hidden_rows.clear();
  int32_t at = 0;  // the chunk's first token in the batch
  for (const auto& c : out.chunks) {
    Request* r = sched.find(c.id);
    const int32_t n = static_cast<int32_t>(c.token_ids.size());
    if (r->params.pooling != Pooling::None) {
      for (int32_t i = 0; i < n; ++i) {
        if (keeps(*r, c.start_pos + i)) {
          batch.hidden_rows.push_back(at + i);
          rows.owner.push_back(r);
        }
      }
    }
    at += n;
  }
  return rows;
}

void fold_pooled_rows(const PooledRows& rows, const ForwardBatch& batch, const float* hidden, int32_t dim) {
  SLIMKV_CHECK(rows.owner.size() <= batch.hidden_rows.size(), "pooling: {} owners for {} hidden rows",  // MTP's follow
               rows.owner.size(), batch.hidden_rows.size());
  for (size_t i = 0; i < rows.owner.size(); ++i) {
    Request& r = *rows.owner[i];
    const float* h = hidden + i * static_cast<size_t>(dim);  // [dim]
    if (r.embedding.empty()) r.embedding.assign(dim, 0.0f);
    if (r.params.pooling == Pooling::Mean) {
      for (int32_t j = 0; j < dim; ++j) r.embedding[j] += h[j];
    } else {
      r.embedding.assign(h, h + dim);
    }
    ++r.pooled_tokens;
    if (r.params.pooling == Pooling::Mean && r.pooled_tokens == r.num_prompt_tokens) {  // the mean, once
      const float inv = 1.0f / static_cast<float>(r.num_prompt_tokens);
      for (float& x : r.embedding) x *= inv;
    }
  }
}

}  // namespace slimkv
