#include "ops/config_lint.h"

#include <fmt/format.h>

#include "core/check.h"
#include "model/kv_streams.h"

namespace slimkv {

std::vector<Finding> lint_config(const EngineConfig& cfg, const ModelConfig& m) {
  std::vector<Finding> f;
  const CompressionConfig& c = cfg.compress;
  try {
    if (m.layers.empty()) c.validate(m.num_layers, m.head_dim);
    else c.validate(kv_layer_specs(m));  // the model's own streams (DeepSeek-V4: natively compressed)
  } catch (const Error& e) {
    f.push_back({"invalid configuration", "a contradiction in the compression flags", "fix the flag named", e.what()});
    return f;
  }
  const int32_t ctx = cfg.sched.max_model_len > 0 ? cfg.sched.max_model_len : m.max_seq_len;
  if (c.dynamic() && c.kv_sparse_topk >= ctx) {
    f.push_back({"sparse retention does nothing", "top-K is at least the context", "lower --kv-sparse-topk below the context",
                 fmt::format("--kv-sparse-topk {} >= context {}", c.kv_sparse_topk, ctx)});
  }
  if (c.sparse() && c.kv_sink_tokens + c.kv_recent_window >= ctx) {
    f.push_back({"sparse retention does nothing", "sinks + window cover the context", "lower --kv-recent-window",
                 fmt::format("{} sinks + {} window >= context {}", c.kv_sink_tokens, c.kv_recent_window, ctx)});
  }
  if ((c.dynamic() || c.sparse()) && cfg.cache.block_size > 16) {
    f.push_back({"coarse eviction", "eviction works on whole blocks", "use --block-size 8 with sparse retention (seed 3.3)",
                 fmt::format("--block-size {}", cfg.cache.block_size)});
  }
  if (c.dynamic() && c.kv_evict_policy == KvEvictPolicy::Drop) {
    f.push_back({"quality left on the table", "evicted tokens are dropped",
                 "--kv-evict-policy merge halved the KL at equal bytes (docs/compression.md)", "--kv-evict-policy drop"});
  }
  if (c.low_rank() && c.dtype() == KvDtype::F32) {
    f.push_back({"memory not down as much as it could be", "low-rank latents are stored in f32",
                 "add --kv-cache-dtype int8 (near-lossless on its own)", "low rank with --kv-cache-dtype f32"});
  }
  if (m.dsv4.enabled() && c.enabled && c.dtype() == KvDtype::F32) {
    f.push_back({"memory not down as much as it could be", "DeepSeek-V4's entries and window are stored in f32",
                 "add --kv-cache-dtype int8 (DeepSeek serves them in fp8)", "--kv-cache-dtype f32"});
  }
  if (m.dsv4.enabled() && c.kv_sparse_topk > m.dsv4.index_topk) {
    f.push_back({"indexer cost without a trained benefit", "--kv-sparse-topk raises the indexer's top-k above the "
                 "model's", fmt::format("keep it at or below the model's {}", m.dsv4.index_topk),
                 fmt::format("--kv-sparse-topk {}", c.kv_sparse_topk)});
  }
  const KvDtype d = c.dtype();
  if ((d == KvDtype::Int4 || d == KvDtype::Tq4 || d == KvDtype::Tq3) && m.head_dim < 32) {
    f.push_back({"quality drop risk", fmt::format("{} with per-head scales needs wide heads", kv_dtype_name(d)),
                 "use int8 for this model (int4 measured KL 0.5 at head dim 8)", fmt::format("head dim {}", m.head_dim)});
  }
  return f;
}

}  // namespace slimkv
