#include "model/lora_ops.h"

#include "core/check.h"

namespace slimkv {

void lora_update_row(const LoraTarget& t, const float* x, float* y) {
  float ax[kMaxLoraRank];  // [rank]: A x (the rank is checked at load)
  for (int32_t k = 0; k < t.rank; ++k) {
    const float* a = t.a.data() + static_cast<size_t>(k) * t.in;
    float s = 0.0f;
    for (int32_t i = 0; i < t.in; ++i) s += a[i] * x[i];
    ax[k] = s;
  }
  for (int32_t o = 0; o < t.out; ++o) {
    const float* b = t.b.data() + static_cast<size_t>(o) * t.rank;
    float s = 0.0f;
    for (int32_t k = 0; k < t.rank; ++k) s += b[k] * ax[k];
    y[o] += t.scale * s;
  }
}

void LoraOps::set_step(const std::vector<const LoraAdapter*>* adapters, const int32_t* token_lora,
                       int64_t num_tokens, const int32_t* row_lora, int64_t num_rows) {
  adapters_ = adapters;
  token_lora_ = token_lora;
  row_lora_ = row_lora;
  num_tokens_ = num_tokens;
  num_rows_ = num_rows;
}

void LoraOps::matmul(const WeightView& w, const float* x, int64_t num_tokens, float* y) {
  inner_->matmul(w, x, num_tokens, y);
  if (adapters_) add_updates(w, x, num_tokens, y);
}

void LoraOps::matmul_same_input(const MatmulOut* outs, int n, const float* x, int64_t num_tokens) {
  inner_->matmul_same_input(outs, n, x, num_tokens);
  if (!adapters_) return;
  for (int i = 0; i < n; ++i) add_updates(*outs[i].w, x, num_tokens, outs[i].y);
}

void LoraOps::add_updates(const WeightView& w, const float* x, int64_t num_tokens, float* y) {
  for (size_t ai = 0; ai < adapters_->size(); ++ai) {
    const auto it = (*adapters_)[ai]->targets.find(w.data);
    if (it == (*adapters_)[ai]->targets.end()) continue;
    const LoraTarget& t = it->second;
    const int32_t* which = t.is_output ? row_lora_ : token_lora_;
    SLIMKV_CHECK(num_tokens == (t.is_output ? num_rows_ : num_tokens_),
                 "LoRA: '{}' multiplied over {} rows, not the step's {} (a block that reads it on a subset of "
                 "tokens cannot take adapters yet)", t.tensor, num_tokens, t.is_output ? num_rows_ : num_tokens_);
    auto rows = [&](int64_t lo, int64_t hi, int32_t) {
      for (int64_t r = lo; r < hi; ++r) {
        if (which[r] == static_cast<int32_t>(ai)) lora_update_row(t, x + r * t.in, y + r * t.out);
      }
    };
    if (pool() && num_tokens > 1) pool()->parallel_for(num_tokens, 1, rows);
    else rows(0, num_tokens, 0);
  }
}

}  // namespace slimkv
