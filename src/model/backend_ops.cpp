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
  void attention(PagedAttention& plan, const float* q, const PagedAttention::LayerKv& kv, const AttentionDims& dims,
                 float* out) override {
    plan.run(q, kv, dims, out, pool_);
  }
  void rmsnorm_rows(float* out, const float* x, const float* w, int64_t num_rows, int64_t n, float eps) override {
    slimkv::rmsnorm_rows(out, x, w, num_rows, n, eps);
  }
  void swiglu(float* gate, const float* up, int64_t n) override { slimkv::swiglu(gate, up, n); }
  void geglu(float* gate, const float* up, int64_t n) override { slimkv::geglu(gate, up, n); }
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
  ThreadPool* pool_;
  Collectives* collectives_;  // null: one process
};

}  // namespace

std::unique_ptr<BackendOps> make_cpu_ops(ThreadPool* pool, Collectives* collectives) {
  return std::make_unique<CpuOps>(pool, collectives);
}

}  // namespace slimkv
