// The operations the blocks run on their hot path, behind one interface: matmul by weight type, paged attention,
// row norms, gated activations, and the collectives tensor / expert parallelism needs (all-reduce after a row-split
// projection, all-to-all for expert dispatch and combine) — no-ops on one process. CpuOps runs today's kernels on a
// thread pool; an MPI shard (issue S) or a GPU backend implements the same calls.
// Must not know: models, families or blocks.
#pragma once
#include <cstdint>
#include <memory>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/paged_attention.h"
#include "model/collectives.h"

namespace slimkv {

class BackendOps {
 public:
  virtual ~BackendOps() = default;
  // y[T, rows] = x[T, cols] · W^T
  virtual void matmul(const WeightView& w, const float* x, int64_t num_tokens, float* y) = 0;
  // The same for up to 4 matrices reading one x (Q / K / V, gate / up): one dispatch where the kernels allow.
  virtual void matmul_same_input(const MatmulOut* outs, int n, const float* x, int64_t num_tokens) {
    for (int i = 0; i < n; ++i) matmul(*outs[i].w, x, num_tokens, outs[i].y);
  }
  // q [T, heads * head_dim_k] -> out [T, heads * head_dim_v] over the plan's pages
  virtual void attention(PagedAttention& plan, const float* q, const PagedAttention::LayerKv& kv,
                         const AttentionDims& dims, float* out) = 0;
  // out[r] = rmsnorm(x[r]) * w for num_rows rows of n (out may be x)
  virtual void rmsnorm_rows(float* out, const float* x, const float* w, int64_t num_rows, int64_t n, float eps) = 0;
  virtual void swiglu(float* gate, const float* up, int64_t n) = 0;  // gate = silu(gate) * up
  virtual void geglu(float* gate, const float* up, int64_t n) = 0;   // gate = gelu_tanh(gate) * up
  // Collectives over the ranks that share a layer (one process: nothing to do).
  virtual void all_reduce_sum(float* x, int64_t n) = 0;  // x = the sum of every rank's x (n floats)
  virtual void all_reduce_sum(double* x, int64_t n) = 0;
  virtual void all_gather(const float* x, int64_t n, float* out) = 0;  // out [ranks, n] = every rank's x, in order
  // The MoE combine: x [rows, row_len] = the sum of every rank's x. `present`
  // null: an all-reduce; otherwise [rows] flags of the rows this rank wrote, the others being zero here and not
  // sent (Collectives::sum_rows: an all-to-all to each row's owner, then an all-gather).
  virtual void combine_experts(float* x, int64_t rows, int64_t row_len, const uint8_t* present) = 0;
  virtual int32_t num_ranks() const = 0;
  virtual ThreadPool* pool() const = 0;
};

// The kernels of src/kernels on this process's thread pool (null: one thread); all-reduces through `collectives`
// (null: one process, nothing to do).
std::unique_ptr<BackendOps> make_cpu_ops(ThreadPool* pool, Collectives* collectives = nullptr);

}  // namespace slimkv
