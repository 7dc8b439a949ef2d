// Tensor and expert parallelism at load (Megatron): keeps this rank's slice of every attention and dense-FFN layer —
// its query heads with the KV heads they read (a KV head is replicated where a model has fewer KV heads than ranks),
// its FFN columns, its expert group's routed experts, column-split inside the group (TensorShard) — and cuts the row-split projections (wo,
// down) to the matching input columns, so the forward's all-reduce after each sums the partial outputs. Norms,
// routers, embeddings and the output head stay whole on every rank.
// Must not know: MPI, engines or KV caches (the KV layout follows the sliced config: KV memory per rank ÷ T).
#pragma once
#include "model/model.h"

namespace slimkv {

// Slices `m` in place (before weight packing). Throws Error naming the layer and the reason where a layer cannot
// be split this way (heads, widths, experts or output groups not divisible; a split inside a quantization
// block). Every layer kind is split: attention (plain, MLA, DeepSeek-V4's), Gated DeltaNet, dense FFN and MoE.
void shard_for_tensor_parallel(Model& m, TensorShard shard);

}  // namespace slimkv
