#include "runner/batch_builder.h"

#include <cmath>

#include "core/check.h"

namespace slimkv {

void build_forward_batch(const SchedOutput& out, int32_t block_size, ForwardBatch& b, int32_t track_window) {
  b.clear();
  b.attn.block_size = block_size;
  for (size_t s = 0; s < out.chunks.size(); ++s) {
    const ScheduledChunk& c = out.chunks[s];
    const int32_t n = static_cast<int32_t>(c.token_ids.size());
    const int32_t end = c.start_pos + n;
    const int32_t pages = (end + block_size - 1) / block_size;
    SLIMKV_CHECK(pages <= static_cast<int32_t>(c.block_table.size()), "batch: request {} has {} blocks for {} tokens",
                 c.id, c.block_table.size(), end);
    for (int32_t j = 0; j < n; ++j) {
      const int32_t pos = c.start_pos + j;
      b.token_ids.push_back(c.token_ids[j]);
      b.positions.push_back(pos);
      b.slots.push_back(static_cast<int64_t>(c.block_table[pos / block_size]) * block_size + pos % block_size);
      b.attn.token_seq.push_back(static_cast<int32_t>(s));
      b.attn.token_pos.push_back(pos);
    }
    if (track_window > 0) {  // live pages only, with their logical index; visible rows per token
      const bool summary = c.summary_block >= 0;
      b.attn.seq_has_summary.push_back(summary ? 1 : 0);
      for (int32_t r = 0; r < block_size; ++r) {
        const float n = summary ? c.summary_count[r] : 0.0f;
        b.attn.seq_summary_bias.push_back(n > 0 ? std::log(n) : -INFINITY);
      }
      if (summary) {  // the summary page comes first: its rows are visible to every token
        b.attn.kv_indices.push_back(c.summary_block);
        b.attn.kv_page_logical.push_back(-1);
      }
      thread_local std::vector<int32_t> live_before;  // visible pages before logical page b (reused buffer)
      live_before.assign(pages + 1, summary ? 1 : 0);
      for (int32_t p = 0; p < pages; ++p) {
        live_before[p + 1] = live_before[p] + (c.block_table[p] >= 0);
        if (c.block_table[p] < 0) continue;
        b.attn.kv_indices.push_back(c.block_table[p]);
        b.attn.kv_page_logical.push_back(p);
      }
      for (int32_t j = 0; j < n; ++j) {
        const int32_t pos = c.start_pos + j;
        b.attn.token_ctx.push_back(live_before[pos / block_size] * block_size + pos % block_size + 1);
        b.attn.token_track.push_back(pos >= c.num_prompt_tokens - track_window ? 1 : 0);
      }
    } else {
      b.attn.kv_indices.insert(b.attn.kv_indices.end(), c.block_table.begin(), c.block_table.begin() + pages);
    }
    b.attn.kv_indptr.push_back(static_cast<int32_t>(b.attn.kv_indices.size()));
    b.attn.kv_last_page_len.push_back(end - (pages - 1) * block_size);
    if (c.samples) b.logits_rows.push_back(b.num_tokens() - 1);
  }
}

}  // namespace slimkv
