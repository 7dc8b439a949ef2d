// Turns the scheduler's plain output into the model's input: token ids, positions, KV slots, the page table in
// CSR form and the rows whose logits are sampled. Pure: same SchedOutput, same ForwardBatch.
// Must not know: how the scheduler decided, or what the model does with the batch.
#pragma once
#include "model/forward_batch.h"
#include "sched/sched_output.h"

namespace slimkv {

void build_forward_batch(const SchedOutput& out, int32_t block_size, ForwardBatch& batch);

}  // namespace slimkv
