#include "model/forward_batch.h"

namespace slimkv {

void ForwardBatch::clear(int32_t num_groups) {
  logits_candidates = 0;
  summary_folds.clear();
  token_ids.clear();
  positions.clear();
  slots.resize(num_groups);
  attn.resize(num_groups);
  states.resize(num_groups);
  for (auto& s : slots) s.clear();
  for (auto& s : states) s.clear();
  draft_state_blocks.clear();
  for (PagedBatchMeta& a : attn) {
    a.token_seq.clear();
    a.token_pos.clear();
    a.kv_indptr.assign(1, 0);
    a.kv_indices.clear();
    a.kv_last_page_len.clear();
    a.token_ctx.clear();
    a.token_track.clear();
    a.kv_page_logical.clear();
    a.seq_has_summary.clear();
    a.seq_summary_bias.clear();
    a.seq_query_by_query.clear();
  }
  logits_rows.clear();
  hidden_rows.clear();
  input_hidden.clear();
  token_lora.clear();
}

}  // namespace slimkv
