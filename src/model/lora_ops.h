// LoRA adapters on the hot path: a BackendOps decorator whose matmul adds, for the rows of the step that use an
// adapter with an update for that weight, scale · B (A x) to the base product (llama.cpp's build_lora_mm: A first).
// Several adapters and the base model in one batch: each token row carries its adapter (-1: none); the output head
// reads logits rows, which carry their token's. With no adapter in the step every call is the base one untouched.
// Must not know: requests, how adapters are loaded, families.
#pragma once
#include <memory>
#include <vector>

#include "model/backend_ops.h"
#include "model/lora_adapter.h"

namespace slimkv {

class LoraOps : public BackendOps {
 public:
  explicit LoraOps(std::unique_ptr<BackendOps> inner) : inner_(std::move(inner)) {}

  // The step's adapters and, per token row [T] and per logits row [rows], an index into them (-1: none). The
  // arrays must outlive the step (clear_step() ends it).
  void set_step(const std::vector<const LoraAdapter*>* adapters, const int32_t* token_lora, int64_t num_tokens,
                const int32_t* row_lora, int64_t num_rows);
  void clear_step() { adapters_ = nullptr; }

  void matmul(const WeightView& w, const float* x, int64_t num_tokens, float* y) override;
  void matmul_same_input(const MatmulOut* outs, int n, const float* x, int64_t num_tokens) override;
  void attention(PagedAttention& plan, const float* q, const PagedAttention::LayerKv& kv, const AttentionDims& dims,
                 float* out) override {
    inner_->attention(plan, q, kv, dims, out);
  }
  void rmsnorm_rows(float* out, const float* x, const float* w, int64_t num_rows, int64_t n, float eps) override {
    inner_->rmsnorm_rows(out, x, w, num_rows, n, eps);
  }
  void swiglu(float* gate, const float* up, int64_t n) override { inner_->swiglu(gate, up, n); }
  void geglu(float* gate, const float* up, int64_t n) override { inner_->geglu(gate, up, n); }
  void all_reduce_sum(float* x, int64_t n) override { inner_->all_reduce_sum(x, n); }
  void all_reduce_sum(double* x, int64_t n) override { inner_->all_reduce_sum(x, n); }
  void all_gather(const float* x, int64_t n, float* out) override { inner_->all_gather(x, n, out); }
  void combine_experts(float* x, int64_t rows, int64_t row_len, const uint8_t* present) override {
    inner_->combine_experts(x, rows, row_len, present);
  }
  int32_t num_ranks() const override { return inner_->num_ranks(); }
  ThreadPool* pool() const override { return inner_->pool(); }

 private:
  // y[T, out] += every adapter's update of w for its rows (x [T, in]).
  void add_updates(const WeightView& w, const float* x, int64_t num_tokens, float* y);

  std::unique_ptr<BackendOps> inner_;
  const std::vector<const LoraAdapter*>* adapters_ = nullptr;  // null: no adapter in this step
  const int32_t *token_lora_ = nullptr, *row_lora_ = nullptr;
  int64_t num_tokens_ = 0, num_rows_ = 0;
};

// y[out] += scale · B (A x) for one row: the scalar reference (x [in], a [rank, in], b [out, rank]).
void lora_update_row(const LoraTarget& t, const float* x, float* y);

}  // namespace slimkv
