#include "runner/sequence_forward.h"

#include <algorithm>

#include "core/check.h"
#include "model/kv_projection.h"

namespace slimkv {

SequenceForward::SequenceForward(const Model& model, ThreadPool* pool, int32_t capacity_tokens, int32_t block_size,
                                 int32_t max_chunk_tokens, const CompressionConfig& compression)
    : fwd_(model, pool), capacity_(capacity_tokens), block_size_(block_size), max_chunk_(max_chunk_tokens),
      layout_(fwd_.kv_layout(block_size, compression)),
      kv_(layout_, layout_.pool_blocks_for_tokens(capacity_tokens)) {
  SLIMKV_CHECK(capacity_tokens > 0, "sequence capacity must be positive");
  tables_.resize(layout_.num_groups());
  std::vector<int32_t> next(layout_.num_pools(), 0);  // the groups of a pool take consecutive ranges of its blocks
  for (int32_t g = 0; g < layout_.num_groups(); ++g) {
    int32_t& first = next[layout_.group_pool(g)];
    const int32_t n = layout_.group_blocks_for_tokens(g, capacity_tokens);
    for (int32_t i = 0; i < n; ++i) tables_[g].blocks.push_back(first + i);
    first += n;
  }
  fwd_.set_kv_projection(load_kv_projection(compression, model, kv_.layout()));
  fwd_.reserve(max_chunk_, max_chunk_);
}

void SequenceForward::forward(std::span<const int32_t> tokens, int32_t start_pos, bool all_logits, float* logits_out) {
  const int32_t n = static_cast<int32_t>(tokens.size());
  SLIMKV_CHECK(n > 0, "forward: no tokens");
  SLIMKV_CHECK(start_pos >= 0 && static_cast<int64_t>(start_pos) + n <= capacity_,
               "positions [{}, {}) exceed the context ({} tokens)", start_pos, static_cast<int64_t>(start_pos) + n,
               capacity_);
  const int32_t vocab = fwd_.model().config.vocab_size;
  for (int32_t i = 0; i < n; i += max_chunk_) {
    const int32_t len = std::min(max_chunk_, n - i);
    const bool last = i + len == n;
    SchedOutput out;
    ScheduledChunk c;
    c.start_pos = start_pos + i;
    c.token_ids = tokens.subspan(i, len);
    c.groups = tables_;
    c.samples = last;
    out.chunks.push_back(c);
    build_forward_batch(out, block_size_, layout_.groups, batch_);
    if (all_logits) {
      batch_.logits_rows.clear();
      for (int32_t t = 0; t < len; ++t) batch_.logits_rows.push_back(t);
    }
    float* dst = all_logits ? logits_out + static_cast<size_t>(i) * vocab : logits_out;
    if (!all_logits && !last) batch_.logits_rows.clear();
    if (lora_) batch_.token_lora.assign(len, 0);
    fwd_.forward(batch_, kv_, dst);
  }
}

void SequenceForward::hidden_states(std::span<const int32_t> tokens, float* out) {
  const int32_t n = static_cast<int32_t>(tokens.size());
  SLIMKV_CHECK(n > 0 && n <= capacity_, "hidden states: {} tokens for a context of {}", n, capacity_);
  const size_t dim = static_cast<size_t>(fwd_.model().config.dim);
  for (int32_t i = 0; i < n; i += max_chunk_) {
    const int32_t len = std::min(max_chunk_, n - i);
    SchedOutput o;
    ScheduledChunk c;
    c.start_pos = i;
    c.token_ids = tokens.subspan(i, len);
    c.groups = tables_;
    c.samples = false;
    o.chunks.push_back(c);
    build_forward_batch(o, block_size_, layout_.groups, batch_);
    batch_.logits_rows.clear();
    for (int32_t t = 0; t < len; ++t) batch_.hidden_rows.push_back(t);
    if (lora_) batch_.token_lora.assign(len, 0);
    fwd_.forward(batch_, kv_, nullptr);
    std::copy(fwd_.hidden_states().begin(), fwd_.hidden_states().end(), out + static_cast<size_t>(i) * dim);
  }
}

std::vector<std::vector<int32_t>> split_windows(const std::vector<int32_t>& ids, int32_t ctx, int32_t bos_id) {
  SLIMKV_CHECK(ctx >= 2, "window length must be at least 2 tokens (got {})", ctx);
  std::vector<std::vector<int32_t>> windows;
  for (size_t s = 1; s < ids.size(); s += static_cast<size_t>(ctx) - 1) {
    std::vector<int32_t> w = {bos_id};
    w.insert(w.end(), ids.begin() + s, ids.begin() + std::min(ids.size(), s + ctx - 1));
    windows.push_back(std::move(w));
  }
  return windows;
}

}  // namespace slimkv
