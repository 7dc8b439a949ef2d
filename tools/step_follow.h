// Tensor parallelism for the commands that schedule (serve, bench offline, generate, profile): rank 0 schedules and
// samples (speculative drafts and the adaptive switch included: decided once, not per rank), and
// before each forward broadcasts the step's plain-data batch; every other rank follows — it runs only the
// forward of each batch it receives on its slice, until rank 0 sends an empty one. Must not know: HTTP or
// workloads.
#pragma once
#include <cstdint>

#include "engine/engine.h"
#include "model/model.h"

namespace slimkv {

// Rank 0: every step's batch goes to the other ranks before its forward (nothing on one process).
void lead_followers(Engine& engine, const Model& model);
// Rank 0, when no step will follow: the other ranks stop following.
void release_followers(const Model& model);
// Ranks other than 0: runs each batch rank 0 sends until the empty one; the number of steps run. The wait between
// batches is polled without spinning (an idle server may send nothing for minutes).
int64_t follow_leader(Engine& engine, const Model& model);

// Every rank must size its pool alike (rank 0's block ids address the others' caches): with more than one rank an
// explicit --kv-cache-memory is required (Error naming the command otherwise). Checked before the model loads.
void require_kv_budget(int32_t tensor_parallel_size, const EngineConfig& cfg, const char* command);
// For the commands that run a workload (generate, profile, bench offline): a rank other than 0 follows until rank 0
// is done and gets true (the command then ends); rank 0 (or one process) leads and gets false, and calls
// finish_leading when its steps are done.
bool follow_unless_leader(Engine& engine, const Model& model);
// Rank 0: saves a disk tier's blocks (every rank its part), then lets the other ranks go.
void finish_leading(Engine& engine, const Model& model);

}  // namespace slimkv
