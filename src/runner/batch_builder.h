// Turns the scheduler's plain output into the model's input: token ids, positions, per KV group the KV slots and
// the page table in CSR form, and the rows whose logits are sampled. Pure: same SchedOutput, same ForwardBatch.
// Must not know: how the scheduler decided, or what the model does with the batch.
#pragma once
#include <vector>

#include "kv/kv_layout.h"
#include "model/forward_batch.h"
#include "sched/sched_output.h"

namespace slimkv {

// groups: the KV groups' specs (KvLayout::groups). Windowed and full groups list every block up to the chunk's end
// (-1 entries behind a window are never read: the kernel's window skips them); a dynamic group (retention) lists
// live blocks only (its summary block first), gives each token its visible row count, and tracks attention
// importance for tokens of the last dyn_window_tokens prompt positions and every later token (and, evicting in
// prefill, for the last dyn_window_tokens tokens before each eviction point).
void build_forward_batch(const SchedOutput& out, int32_t block_size, const std::vector<KvGroup>& groups,
                         ForwardBatch& batch);
// One full-attention group: what single-sequence tools and tests use.
void build_forward_batch(const SchedOutput& out, int32_t block_size, ForwardBatch& batch);

// Adds the attention mass each page of chunk s received (page_importance of group g, per page entry) to the
// sequence's per-block importance.
void accumulate_importance(const ForwardBatch& batch, int32_t g, const std::vector<double>& page_importance, size_t s,
                           GroupKv& gk);
// The same for one row of a verify chunk s (row: its mass per page entry of the sequence, DecoderForward::
// row_importance): added for each accepted row in order, as decode steps would have added them.
void accumulate_row_importance(const ForwardBatch& batch, int32_t g, const double* row, size_t s, GroupKv& gk);

}  // namespace slimkv
