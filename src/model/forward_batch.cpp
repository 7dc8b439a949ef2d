#include "model/forward_batch.h"

namespace slimkv {

void ForwardBatch::clear() {
  token_ids.clear();
  positions.clear();
  slots.clear();
  attn.token_seq.clear();
  attn.token_pos.clear();
  attn.kv_indptr.assign(1, 0);
  attn.kv_indices.clear();
  attn.kv_last_page_len.clear();
  attn.token_ctx.clear();
  attn.token_track.clear();
  attn.kv_page_logical.clear();
  attn.seq_has_summary.clear();
  attn.seq_summary_bias.clear();
  logits_rows.clear();
}

}  // namespace slimkv
