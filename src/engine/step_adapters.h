// LoRA adapters in the engine's step: the distinct adapters of the step's requests (RequestParams::lora), and each
// batch token's index into them (ForwardBatch::token_lora; -1 for the base model) — several adapters and the base
// model in one batch. Must not know: how adapters are applied (model/lora_ops.h) or loaded.
#pragma once
#include <vector>

#include "model/forward_batch.h"
#include "model/lora_adapter.h"
#include "sched/scheduler.h"

namespace slimkv {

// Fills batch.token_lora (left empty when no request of the step has an adapter); returns the adapters it indexes.
std::vector<const LoraAdapter*> plan_adapter_rows(const SchedOutput& out, Scheduler& sched, ForwardBatch& batch);

}  // namespace slimkv
