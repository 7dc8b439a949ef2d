#include "model/kv_cache.h"

#include "core/check.h"

namespace slimkv {

ContiguousKvCache::ContiguousKvCache(const ModelConfig& cfg, int32_t capacity_tokens)
    : capacity_tokens_(capacity_tokens), kv_dim_(cfg.kv_dim()) {
  SLIMKV_CHECK(capacity_tokens > 0, "KV cache capacity must be positive (got {})", capacity_tokens);
  size_t n = static_cast<size_t>(cfg.num_layers) * capacity_tokens * kv_dim_;
  k_.assign(n, 0.0f);
  v_.assign(n, 0.0f);
}

}  // namespace slimkv
