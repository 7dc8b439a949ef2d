#include "model/backend_ops.h"

#include <algorithm>

#include "core/profiler.h"
#include "kernels/ops.h"

namespace slimkv {
namespace {

class CpuOps : public BackendOps {
 public:
  CpuOps(ThreadPool* pool, Collectives* collectives) : pool_(pool), collectives_(collectives) {}
  void matmul(const WeightView& w, const float* x, int64_t num_tokens, float* y) override {
    slimkv::matmul(w, x, num_tokens, y, pool_);
  }
  void matmul_same_input(const MatmulOut* outs, int n, const float* x, int64_t num_tokens) override {
    slimkv::matmul_same_input(outs, n, x, num_tokens, pool_);
  }
  void attention(PagedAttention& plan, const float* q, const PagedAttention::LayerKv& kv, const AttentionDims& dims,
                 float* out) override {
    plan.run(q, kv, dims, out, pool_);
  }
  void rmsnorm_rows(float* out, const float* x, const float* w, int64_t num_rows, int64_t n, float eps) override {
    slimkv::rmsnorm_rows(out, x, w, num_rows, n, eps);
  }
  // Element-wise, so split over the threads when long enough (a decode step's 8192-wide SwiGLU ran on one thread
  // while the other waited): the same values whatever the split.
  void swiglu(float* gate, const float* up, int64_t n) override {
    elementwise(n, [&](int64_t i0, int64_t i1) { slimkv::swiglu(gate + i0, up + i0, i1 - i0); });
  }
  void geglu(float* gate, const float* up, int64_t n) override {
    elementwise(n, [&](int64_t i0, int64_t i1) { slimkv::geglu(gate + i0, up + i0, i1 - i0); });
  }
  void all_reduce_sum(float* x, int64_t n) override {  // one rank holds the whole sum
    if (collectives_) {
      ProfScope ps(ProfKind::Collective);
      collectives_->all_reduce_sum(x, n);
    }
  }
  void all_reduce_sum(double* x, int64_t n) override {
    if (collectives_) {
      ProfScope ps(ProfKind::Collective);
      collectives_->all_reduce_sum(x, n);
    }
  }
  void all_gather(const float* x, int64_t n, float* out) override {
    if (!collectives_) {
      std::copy(x, x + n, out);
      return;
    }
    ProfScope ps(ProfKind::Collective);
    collectives_->all_gather(x, n, out);
  }
  void combine_experts(float* x, int64_t rows, int64_t row_len, const uint8_t* present) override {
    if (!collectives_) return;
    ProfScope ps(ProfKind::Collective);
    if (present) {
      collectives_->sum_rows(x, rows, row_len, present);
    } else {
      collectives_->all_reduce_sum(x, rows * row_len);
    }
  }
  int32_t num_ranks() const override { return collectives_ ? collectives_->size() : 1; }
  ThreadPool* pool() const override { return pool_; }

 private:
  template <typename Fn>
  void elementwise(int64_t n, Fn fn) {
    constexpr int64_t kGrain = 2048;  // below two grains one thread does it (a dispatch costs ~1 us)
    if (pool_ == nullptr || n < 2 * kGrain) return fn(0, n);
    pool_->parallel_for(n, kGrain, [&](int64_t i0, int64_t i1, int32_t) { fn(i0, i1); });
  }

  ThreadPool* pool_;
  Collectives* collectives_;  // null: one process
};

}  // namespace

std::unique_ptr<BackendOps> make_cpu_ops(ThreadPool* pool, Collectives* collectives) {
  return std::make_unique<CpuOps>(pool, collectives);
}

}  // namespace slimkv
