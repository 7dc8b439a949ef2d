// Embedding requests inside the engine's step: which of a step's tokens keep their final hidden state (the
// pooled positions of requests with RequestParams::pooling), and how those rows fold into Request::embedding —
// mean (summed in order, divided once the last prompt token is in), first (CLS) or last.
// Must not know: HTTP, tokenizers or normalisation (the server's encoding step).
#pragma once
#include <cstdint>
#include <vector>

#include "model/forward_batch.h"
#include "sched/scheduler.h"

namespace slimkv {

// The step's rows to keep, in batch order: batch.hidden_rows and, beside them, whose row each is.
struct PooledRows {
  std::vector<Request*> owner;  // [hidden_rows]
};

// Fills batch.hidden_rows with the rows each pooled request still needs (a position pooled before a preemption is
// not kept again); returns their owners.
PooledRows plan_pooled_rows(const SchedOutput& out, Scheduler& sched, ForwardBatch& batch);
// Folds the forward's hidden rows ([hidden_rows, dim]) into their owners' embeddings.
void fold_pooled_rows(const PooledRows& rows, const ForwardBatch& batch, const float* hidden, int32_t dim);

}  // namespace slimkv
