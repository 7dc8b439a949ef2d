// The model's input for one step: a varlen batch of tokens from many sequences (plain data, built by the runner),
// with one KV slot per token and one page table per KV group (kv/kv_layout.h).
// Must not know: requests or the scheduler.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/paged_attention.h"

namespace slimkv {

struct ForwardBatch {
  std::vector<int32_t> token_ids;    // [T]
  std::vector<int32_t> positions;    // [T] position of each token in its sequence
  std::vector<std::vector<int64_t>> slots;  // [groups][T] KV slot = block_id * block_size + offset, per group
  std::vector<PagedBatchMeta> attn;  // [groups] page table (CSR) + per-token sequence and position
  std::vector<int32_t> logits_rows;  // token indices whose logits are computed, in output order

  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
  int32_t num_groups() const { return static_cast<int32_t>(attn.size()); }
  void clear(int32_t num_groups);
};

}  // namespace slimkv
