// The model's input for one step: a varlen batch of tokens from many sequences (plain data, built by the runner),
// with one KV slot per token and one page table per KV group (kv/kv_layout.h), or for a recurrent-state group each
// sequence's state blocks.
// Must not know: requests or the scheduler.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/paged_attention.h"

namespace slimkv {

// One sequence's recurrent state for a step (a KvGroupKind::Recurrent group): the block its chunk starts from, the
// block it leaves its state in, and where a snapshot is taken for the prefix cache.
struct StateSlots {
  int32_t first_token = 0, num_tokens = 0;  // its tokens in the batch: [first_token, first_token + num_tokens)
  int32_t in_block = -1;        // the state the chunk starts from; -1 = zeros (the chunk starts the sequence)
  int32_t out_block = -1;       // the sequence's live state, left here at the chunk's end (may equal in_block)
  int32_t snapshot_block = -1;  // with snapshot_token >= 0: the state after that token of the chunk is copied here
  int32_t snapshot_token = -1;
  // A speculative verify chunk: the state after its token j (j < num_draft_states) is copied into block
  // ForwardBatch::draft_state_blocks[draft_first + j] (kept if verification stops there).
  int32_t draft_first = 0, num_draft_states = 0;
};

// One block folded into a sequence's summary block by dynamic retention's merge (model/summary_merger.h): every
// row r of src_block, weighted `weight` each, averaged into the summary row `slot` of dst_block that already
// held `weight_before`. Decided on rank 0; a tensor-parallel follower applies the same folds to its own heads.
struct SummaryFold {
  int32_t group = 0, dst_block = -1, slot = 0, src_block = -1;
  float weight = 0.0f, weight_before = 0.0f;
};

struct ForwardBatch {
  std::vector<int32_t> token_ids;    // [T]
  std::vector<int32_t> positions;    // [T] position of each token in its sequence
  std::vector<std::vector<int64_t>> slots;  // [groups][T] KV slot = block_id * block_size + offset, per group
  std::vector<PagedBatchMeta> attn;  // [groups] page table (CSR) + per-token sequence and position
  std::vector<std::vector<StateSlots>> states;  // [groups][sequences] recurrent-state groups only (else empty)
  std::vector<int32_t> draft_state_blocks;  // the blocks StateSlots::draft_first.. name, over all groups
  std::vector<int32_t> logits_rows;  // token indices whose logits are computed, in output order
  // token indices whose final hidden states (after the final norm: what embeddings pool) are kept, in order;
  // rank 0 only (a tensor-parallel follower's batch never has them)
  std::vector<int32_t> hidden_rows;
  // [T, dim] an MTP head's input (model/mtp_head.h): each token's preceding hidden state; empty for other models.
  // Rank 0 only (MTP heads run in one process).
  std::vector<float> input_hidden;
  // [T] each token's LoRA adapter, an index into DecoderForward::set_step_loras' list (-1: the base model); empty:
  // no adapter in the step. Rank 0 only (adapters are refused under tensor parallelism).
  std::vector<int32_t> token_lora;
  // > 0: the step needs only each row's top logits_candidates logits (greedy, or top-k sampling with nothing that
  // reads the whole row); the others may come back as -inf, so a vocabulary-parallel head exchanges each rank's
  // candidates instead of its whole slice. 0: whole rows.
  int32_t logits_candidates = 0;
  // Tensor parallelism: the summary folds rank 0 made since the previous step, in order; a follower applies them
  // to its KV before this step's forward (one process: always empty, the merge has written them already).
  std::vector<SummaryFold> summary_folds;

  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
  int32_t num_groups() const { return static_cast<int32_t>(attn.size()); }
  void clear(int32_t num_groups);
};

}  // namespace slimkv
