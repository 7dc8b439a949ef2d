// The model's input for one step: a varlen batch of tokens from many sequences (plain data, built by the runner).
// Must not know: requests or the scheduler.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/paged_attention.h"

namespace slimkv {

struct ForwardBatch {
  std::vector<int32_t> token_ids;    // [T]
  std::vector<int32_t> positions;    // [T] position of each token in its sequence
  std::vector<int64_t> slots;        // [T] KV slot = block_id * block_size + offset, where its K/V row is written
  PagedBatchMeta attn;               // page table (CSR) + per-token sequence and position
  std::vector<int32_t> logits_rows;  // token indices whose logits are computed, in output order

  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
  void clear();
};

}  // namespace slimkv
