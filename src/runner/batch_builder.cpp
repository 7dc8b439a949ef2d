#include "runner/batch_builder.h"

#include <cmath>

#include "core/check.h"

namespace slimkv {

namespace {

// A recurrent-state group: every token of the chunk addresses its sequence's one live state block; the chunk
// starts from zeros (position 0), a prefix hit's snapshot (the chunk right after the hit) or the live state, and
// copies the state into a planned snapshot block after the token that completes the snapshot's prefix.
void add_state_slots(const ScheduledChunk& c, size_t seq, int32_t first_token, int32_t block_size, ForwardBatch& b,
                     int32_t g) {
  const GroupKv& gk = c.groups[g];
  const int32_t n = static_cast<int32_t>(c.token_ids.size());
  SLIMKV_CHECK(!gk.blocks.empty() && gk.blocks[0] >= 0, "batch: request {} has no recurrent state block", c.id);
  StateSlots st;
  st.first_token = first_token;
  st.num_tokens = n;
  st.out_block = gk.blocks[0];
  if (c.start_pos > 0) {
    const bool from_hit = gk.state_source >= 0 && c.start_pos == gk.state_source_tokens;
    st.in_block = from_hit ? gk.state_source : st.out_block;
  }
  const int32_t snap = gk.snapshot_tokens - 1 - c.start_pos;  // the chunk's token that completes the prefix
  if (gk.snapshot_block >= 0 && snap >= 0 && snap < n) {
    st.snapshot_block = gk.snapshot_block;
    st.snapshot_token = snap;
  }
  if (!gk.draft_states.empty()) {  // a verify chunk: the state after each row but the last, for the rollback
    SLIMKV_CHECK(static_cast<int32_t>(gk.draft_states.size()) == n - 1,
                 "batch: request {} has {} draft states for {} rows", c.id, gk.draft_states.size(), n);
    st.draft_first = static_cast<int32_t>(b.draft_state_blocks.size());
    st.num_draft_states = n - 1;
    b.draft_state_blocks.insert(b.draft_state_blocks.end(), gk.draft_states.begin(), gk.draft_states.end());
  }
  b.states[g].push_back(st);
  PagedBatchMeta& a = b.attn[g];
  for (int32_t j = 0; j < n; ++j) {
    b.slots[g].push_back(static_cast<int64_t>(st.out_block) * block_size);
    a.token_seq.push_back(static_cast<int32_t>(seq));
    a.token_pos.push_back(c.start_pos + j);
  }
  a.kv_indices.push_back(st.out_block);
  a.kv_indptr.push_back(static_cast<int32_t>(a.kv_indices.size()));
  a.kv_last_page_len.push_back(block_size);
}

}  // namespace

void build_forward_batch(const SchedOutput& out, int32_t block_size, const std::vector<KvGroup>& groups,
                         ForwardBatch& b) {
  const int32_t G = static_cast<int32_t>(groups.size());
  b.clear(G);
  for (int32_t g = 0; g < G; ++g) b.attn[g].block_size = block_size;
  for (size_t s = 0; s < out.chunks.size(); ++s) {
    const ScheduledChunk& c = out.chunks[s];
    const int32_t n = static_cast<int32_t>(c.token_ids.size());
    const int32_t end = c.start_pos + n;
    const int32_t pages = (end + block_size - 1) / block_size;
    SLIMKV_CHECK(static_cast<int32_t>(c.groups.size()) == G, "batch: request {} has {} block tables for {} groups",
                 c.id, c.groups.size(), G);
    for (int32_t j = 0; j < n; ++j) {
      b.token_ids.push_back(c.token_ids[j]);
      b.positions.push_back(c.start_pos + j);
    }
    for (int32_t g = 0; g < G; ++g) {
      const GroupKv& gk = c.groups[g];
      const std::vector<BlockId>& table = gk.blocks;
      PagedBatchMeta& a = b.attn[g];
      const KvGroupSpec& spec = groups[g].spec;
      if (spec.recurrent_state()) {
        add_state_slots(c, s, b.num_tokens() - n, block_size, b, g);
        continue;
      }
      if (spec.compressed()) {  // entries: a token that completes entry e writes it; pages hold complete entries
        const int32_t r = spec.entry_tokens, entries = end / r, epages = (entries + block_size - 1) / block_size;
        SLIMKV_CHECK(epages <= static_cast<int32_t>(table.size()), "batch: request {} has {} blocks for {} entries",
                     c.id, table.size(), entries);
        for (int32_t j = 0; j < n; ++j) {
          const int32_t pos = c.start_pos + j, e = (pos + 1) / r - 1;
          const bool writes = (pos + 1) % r == 0;
          SLIMKV_CHECK(!writes || table[e / block_size] >= 0, "batch: request {} writes entry {} into a freed block",
                       c.id, e);
          b.slots[g].push_back(writes ? static_cast<int64_t>(table[e / block_size]) * block_size + e % block_size
                                      : -1);
          a.token_seq.push_back(static_cast<int32_t>(s));
          a.token_pos.push_back(pos);
        }
        a.kv_indices.insert(a.kv_indices.end(), table.begin(), table.begin() + epages);
        a.kv_indptr.push_back(static_cast<int32_t>(a.kv_indices.size()));
        a.kv_last_page_len.push_back(epages == 0 ? 0 : entries - (epages - 1) * block_size);
        continue;
      }
      SLIMKV_CHECK(pages <= static_cast<int32_t>(table.size()), "batch: request {} has {} blocks for {} tokens", c.id,
                   table.size(), end);
      for (int32_t j = 0; j < n; ++j) {
        const int32_t pos = c.start_pos + j;
        SLIMKV_CHECK(table[pos / block_size] >= 0, "batch: request {} writes position {} into a freed block", c.id,
                     pos);
        b.slots[g].push_back(static_cast<int64_t>(table[pos / block_size]) * block_size + pos % block_size);
        a.token_seq.push_back(static_cast<int32_t>(s));
        a.token_pos.push_back(pos);
      }
      if (spec.dynamic()) {  // live pages only, with their logical index; visible rows per token
        const bool summary = gk.summary_block >= 0;
        a.seq_has_summary.push_back(summary ? 1 : 0);
        for (int32_t r = 0; r < block_size; ++r) {
          const float cnt = summary ? gk.summary_count[r] : 0.0f;
          a.seq_summary_bias.push_back(cnt > 0 ? std::log(cnt) : -INFINITY);
        }
        if (summary) {  // the summary page comes first: its rows are visible to every token
          a.kv_indices.push_back(gk.summary_block);
          a.kv_page_logical.push_back(-1);
        }
        thread_local std::vector<int32_t> live_before;  // visible pages before logical page p (reused buffer)
        live_before.assign(pages + 1, summary ? 1 : 0);
        for (int32_t p = 0; p < pages; ++p) {
          live_before[p + 1] = live_before[p] + (table[p] >= 0);
          if (table[p] < 0) continue;
          a.kv_indices.push_back(table[p]);
          a.kv_page_logical.push_back(p);
        }
        for (int32_t j = 0; j < n; ++j) {
          const int32_t pos = c.start_pos + j;
          a.token_ctx.push_back(live_before[pos / block_size] * block_size + pos % block_size + 1);
          // the prompt's last dyn_window_tokens queries and every later one score the cache (SnapKV); evicting in
          // prefill, each chunk's last dyn_window_tokens queries too
          const int32_t every = spec.prefill_evict_every();  // the last queries before each eviction point
          const bool chunk_tail = every > 0 && pos % every >= every - spec.dyn_window_tokens;
          a.token_track.push_back(pos >= c.num_prompt_tokens - spec.dyn_window_tokens || chunk_tail ? 1 : 0);
        }
      } else {
        a.kv_indices.insert(a.kv_indices.end(), table.begin(), table.begin() + pages);
      }
      a.kv_indptr.push_back(static_cast<int32_t>(a.kv_indices.size()));
      a.kv_last_page_len.push_back(end - (pages - 1) * block_size);
      a.seq_query_by_query.push_back(c.num_drafts > 0 ? 1 : 0);
    }
    if (c.samples) {  // the last row, or a verify chunk's last num_drafts + 1 rows (each position's next token)
      for (int32_t j = c.num_drafts; j >= 0; --j) b.logits_rows.push_back(b.num_tokens() - 1 - j);
    }
  }
}

void build_forward_batch(const SchedOutput& out, int32_t block_size, ForwardBatch& b) {
  static const std::vector<KvGroup> one(1);
  build_forward_batch(out, block_size, one, b);
}

void accumulate_row_importance(const ForwardBatch& b, int32_t g, const double* row, size_t s, GroupKv& gk) {
  const PagedBatchMeta& a = b.attn[g];
  for (int32_t e = a.kv_indptr[s]; e < a.kv_indptr[s + 1]; ++e) {
    const int32_t logical = a.kv_page_logical[e];
    if (logical < 0) continue;  // the summary page
    if (static_cast<int32_t>(gk.importance.size()) <= logical) gk.importance.resize(logical + 1, 0.0);
    gk.importance[logical] += row[e - a.kv_indptr[s]];
  }
}

void accumulate_importance(const ForwardBatch& b, int32_t g, const std::vector<double>& imp, size_t s, GroupKv& gk) {
  accumulate_row_importance(b, g, imp.data() + b.attn[g].kv_indptr[s], s, gk);
}

}  // namespace slimkv
