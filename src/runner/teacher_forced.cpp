#include "runner/teacher_forced.h"

#include <algorithm>

#include "model/kv_projection.h"
#include "model/summary_merger.h"
#include "runner/batch_builder.h"

namespace slimkv {

namespace {

// One sequence, + a spare per group. A windowed or retaining group frees blocks only after a step, so a prefill
// chunk first needs its own blocks on top of what it keeps: every group may hold the whole capacity at once.
std::vector<int32_t> pool_blocks(const KvLayout& layout, int32_t capacity_tokens) {
  std::vector<int32_t> out;
  const int64_t whole = (static_cast<int64_t>(capacity_tokens) + layout.block_size_tokens - 1) / layout.block_size_tokens;
  for (int32_t p = 0; p < layout.num_pools(); ++p) {
    int32_t groups = 0;
    for (int32_t g = 0; g < layout.num_groups(); ++g) groups += layout.group_pool(g) == p;
    const int64_t need = std::max<int64_t>(layout.blocks_for_sequence(capacity_tokens, 1, p), whole * groups);
    out.push_back(static_cast<int32_t>(need) + groups);
  }
  return out;
}

}  // namespace

TeacherForcedRun::TeacherForcedRun(const Model& model, ThreadPool* pool, const CompressionConfig& cc,
                                   int32_t capacity_tokens, int32_t block_size)
    : fwd_(model, pool), cc_(cc), block_size_(block_size), layout_(fwd_.kv_layout(block_size, cc)),
      kv_(layout_, pool_blocks(layout_, capacity_tokens)),
      mgr_(kv_.pool_blocks(), block_size, /*enable_prefix_caching=*/false, 0, group_specs(layout_)) {
  fwd_.set_kv_projection(load_kv_projection(cc, model, layout_));
  if (cc.enabled) fwd_.block_options().index_topk = cc.kv_sparse_topk;  // a sparse indexer's top-k, where one runs
  mgr_.set_evict_hook([this](SeqKv& seq, int32_t g, const std::vector<KvCacheManager::Evicted>& ev) {
    merge_into_summaries(kv_, mgr_, seq, g, ev);
  });
}

void TeacherForcedRun::step(int32_t token, float* logits) {
  tokens_.push_back(token);
  run_chunk(num_tokens() - 1, 1, /*num_prompt=*/1, false, logits);  // after BOS all is decode: retention acts at once
}

void TeacherForcedRun::prefill(std::span<const int32_t> prompt, int32_t chunk_tokens, bool all_logits, float* logits) {
  SLIMKV_CHECK(!prompt.empty() && chunk_tokens > 0, "prefill: {} tokens in chunks of {}", prompt.size(), chunk_tokens);
  const int32_t start = num_tokens(), n = static_cast<int32_t>(prompt.size());
  const size_t vocab = static_cast<size_t>(fwd_.model().config.vocab_size);
  tokens_.insert(tokens_.end(), prompt.begin(), prompt.end());
  for (int32_t i = 0, len = 0; i < n; i += len) {
    len = std::min({chunk_tokens, n - i, mgr_.prefill_chunk_limit(start + i, start + n)});
    run_chunk(start + i, len, start + n, all_logits, all_logits ? logits + static_cast<size_t>(i) * vocab : logits);
  }
}

// tokens_[from, from + len) through the model as one scheduled chunk (the last row's logits, or every row's with
// all_logits, into dst), then what the engine does after a step: importance, the prefix cache, retention.
void TeacherForcedRun::run_chunk(int32_t from, int32_t len, int32_t num_prompt, bool all_logits, float* dst) {
  const int32_t end = from + len;
  SLIMKV_CHECK(mgr_.allocate_slots(seq_, end), "teacher-forced run: KV capacity exceeded at {} tokens", end);
  SchedOutput out;
  ScheduledChunk c;
  c.start_pos = from;
  c.token_ids = std::span<const int32_t>(tokens_).subspan(static_cast<size_t>(from), static_cast<size_t>(len));
  c.groups = seq_.groups;
  c.samples = end == num_tokens();
  c.num_prompt_tokens = num_prompt;
  out.chunks.push_back(c);
  build_forward_batch(out, block_size_, layout_.groups, batch_);
  if (all_logits) {
    batch_.logits_rows.clear();
    for (int32_t t = 0; t < len; ++t) batch_.logits_rows.push_back(t);
  }
  fwd_.forward(batch_, kv_, dst);
  for (int32_t g = 0; g < layout_.num_groups(); ++g) {
    if (layout_.groups[g].spec.dynamic()) accumulate_importance(batch_, g, fwd_.page_importance(g), 0, seq_.groups[g]);
  }
  mgr_.cache_full_blocks(seq_, tokens_, end);
  mgr_.evict_least_attended(seq_, end, num_prompt);
}

}  // namespace slimkv
