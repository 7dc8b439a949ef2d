// Per-rank arithmetic of tensor and expert parallelism (issue S): weights and KV per rank, and the bytes the
// collectives move per token, from a model's own weights or from a published shape (DeepSeek-V4-Flash).
// Pure functions over plain structs. Must not know: MPI, engines or the kernels.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace slimkv {

struct Model;

// What the arithmetic needs, in bytes as stored.
struct ParallelShape {
  std::string name;
  int64_t num_layers = 0, dim = 0;
  int64_t head_split_bytes = 0;     // attention projections split by heads over T (q, k, v, o and their LoRA parts)
  int64_t dense_ffn_bytes = 0;      // dense FFN matrices, split by columns over T
  int64_t expert_bytes = 0;         // routed experts: over E groups, column-split over T / E inside each
  int64_t shared_expert_bytes = 0;  // shared experts, split by columns over T
  int64_t replicated_bytes = 0;     // embeddings, output head, norms, routers, compressors, indexers: on every rank
  int64_t num_moe_layers = 0, num_experts = 0, experts_used = 0;  // num_experts 0: unknown (independent choices)
  int64_t kv_split_bytes_per_token = 0;       // KV held per KV head: divided over T (not below one head)
  int64_t kv_replicated_bytes_per_token = 0;  // one shared latent / compressed stream: every rank holds it whole
  int64_t min_kv_heads = 0;                   // fewest KV heads of a split layer (replication below it)
};

struct ParallelPlanRow {
  int32_t tensor_parallel = 1, expert_parallel = 1, ranks = 1;
  int64_t weights_bytes_per_rank = 0;
  int64_t kv_bytes_per_rank = 0;                // context x batch
  int64_t all_reduce_bytes_per_token = 0;       // one rank's buffers: 2 per layer, dim f32 values each
  int64_t all_reduce_wire_bytes_per_token = 0;  // a ring sends 2 (T - 1) / T of them per rank
  // The all-to-all expert combine instead (--expert-combine all-to-all): per rank and token on the wire — the other
  // layers' all-reduces as above, and per MoE layer the token's row sent to its owner when one of its experts is in
  // this rank's group (probability expert_reach) plus the all-gather of the owners' rows, (T - 1) / T each.
  double expert_reach = 0;
  int64_t all_to_all_wire_bytes_per_token = 0;
};

// T ranks (the MPI job) split attention and dense FFNs; E expert groups (E divides T) of T / E ranks hold the routed
// experts, each expert column-split inside its group — slimkv's runtime layout (model/tensor_shard.h), as in vLLM,
// SGLang and TensorRT-LLM. Weights per rank do not depend on E; the expert combine's bytes do.
ParallelPlanRow plan_parallel(const ParallelShape& s, int32_t tensor_parallel, int32_t expert_parallel,
                              int64_t context_tokens, int64_t batch);

ParallelShape parallel_shape_of_model(const Model& m, int64_t kv_split_bytes_per_token,
                                      int64_t kv_replicated_bytes_per_token);
// A planner shape (`plan --preset NAME` or explicit hyper-parameters) from its weights and KV bytes: attention
// (q, k, v, o by heads) split over T, embeddings and head whole, every other weight (FFN or experts — a preset does
// not say which) over all T x E ranks; KV per head split, an MLA latent whole. An approximation, said in the output.
struct ModelShape;
ParallelShape parallel_shape_of_plan(const ModelShape& s, int64_t weights_bytes, int64_t kv_bytes_per_token);
// deepseek-v4-flash (its config.json's shape, bf16), or throws.
ParallelShape parallel_shape_preset(const std::string& name);
bool is_parallel_preset(const std::string& name);

}  // namespace slimkv
