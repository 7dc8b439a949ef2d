// The KV cache of one sequence, contiguous per layer (issue B replaces it with paged blocks behind the
// same row accessors). Must not know: attention math or requests.
#pragma once
#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace slimkv {

class ContiguousKvCache {
 public:
  ContiguousKvCache(const ModelConfig& cfg, int32_t capacity_tokens);

  int32_t capacity_tokens() const { return capacity_tokens_; }
  int32_t kv_dim() const { return kv_dim_; }
  // Row of kv_dim floats for (layer, pos); rows of one layer are kv_dim floats apart.
  float* k_row(int32_t layer, int32_t pos) { return k_.data() + index(layer, pos); }
  float* v_row(int32_t layer, int32_t pos) { return v_.data() + index(layer, pos); }
  int64_t size_bytes() const { return static_cast<int64_t>((k_.size() + v_.size()) * sizeof(float)); }

 private:
  size_t index(int32_t layer, int32_t pos) const {
    return (static_cast<size_t>(layer) * capacity_tokens_ + pos) * kv_dim_;
  }
  int32_t capacity_tokens_, kv_dim_;
  std::vector<float> k_, v_;  // [num_layers, capacity_tokens, kv_dim] each
};

}  // namespace slimkv
