// Turns the scheduler's plain output into the model's input: token ids, positions, KV slots, the page table in
// CSR form and the rows whose logits are sampled. Pure: same SchedOutput, same ForwardBatch.
// Must not know: how the scheduler decided, or what the model does with the batch.
#pragma once
#include "model/forward_batch.h"
#include "sched/sched_output.h"

namespace slimkv {

// track_window > 0 (dynamic retention): page tables list live blocks only (evicted entries are -1), each token gets
// its visible row count, and tokens of the last track_window prompt positions and every later token are tracked
// for attention importance.
void build_forward_batch(const SchedOutput& out, int32_t block_size, ForwardBatch& batch, int32_t track_window = 0);

}  // namespace slimkv
