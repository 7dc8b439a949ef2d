#include "ops/calibration_run.h"

#include <cmath>

#include "model/kv_projection.h"
#include "ops/quality_eval.h"
#include "runner/sequence_forward.h"

namespace slimkv {

void measure_layer_sensitivity(const Model& model, ThreadPool* pool, const std::vector<int32_t>& ids, int32_t ctx,
                               int32_t num_tokens, Calibration& cal) {
  const ModelConfig& c = model.config;
  std::vector<int32_t> head(ids.begin(), ids.begin() + std::min<size_t>(ids.size(), num_tokens));
  if (ctx < 64 || head.size() < 2) return;  // too short a context to evict anything
  const int32_t bs = 16, window = std::max(16, ctx / 16);
  QualityEvaluator ev(model, pool, head, ctx, "", 0, bs);
  CompressionConfig cc;
  cc.kv_sparse_mode = "dynamic";
  cc.kv_sink_tokens = 4;
  cc.kv_recent_window = window;
  cc.kv_sparse_topk = ctx + bs;  // others keep everything
  const int32_t small = 4 + window + window;  // the one layer measured keeps sinks + window + as many selected
  cal.sensitivity_tokens = small;
  cal.layer_sensitivity.assign(c.num_layers, 0.0f);
  for (int32_t l = 0; l < c.num_layers; ++l) {
    if (c.layers[l].sliding_window > 0 && c.layers[l].sliding_window < c.max_seq_len) continue;  // not retained
    cc.kv_sparse_layer_topk.assign(c.num_layers, ctx + bs);
    cc.kv_sparse_layer_topk[l] = small;
    cal.layer_sensitivity[l] = static_cast<float>(ev.evaluate(fmt::format("layer {}", l), cc).mean_kl);
  }
}

Calibration calibrate_model(const Model& model, ThreadPool* pool, const std::vector<int32_t>& ids, int32_t ctx,
                            const std::function<void(size_t, size_t)>& progress, int32_t profile_tokens,
                            int32_t sensitivity_tokens) {
  const ModelConfig& c = model.config;
  SLIMKV_CHECK(ids.size() >= 2, "too little text to calibrate on ({} tokens)", ids.size());
  SLIMKV_CHECK(c.uniform_kv(), "calibration needs the same KV heads and head sizes in every layer");
  SequenceForward fwd(model, pool, ctx);
  KvCovariance cov(c.num_layers, c.num_kv_heads, c.head_dim);
  // Attention profile: 8-token blocks (the engine's default), up to the window; queries from position 64 on.
  AttentionProfiler prof(c.num_layers, 8, (ctx + 7) / 8, std::min(64, ctx / 2));
  const float scale = c.attn_scale > 0 ? c.attn_scale : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const float* q_rows = nullptr;
  bool profiling = profile_tokens > 0;
  fwd.forward_pass().set_q_observer([&](int32_t, const float* q, int32_t) { q_rows = q; });
  fwd.forward_pass().set_kv_observer([&](int32_t l, const float* k, const float* v, int32_t T) {
    cov.add(l, k, v, T);
    const LayerConfig& lc = c.layers[l];
    cov.add_queries(l, q_rows, T, lc.num_heads);  // (the q observer runs just before, on the same layer)
    if (profiling) prof.add(l, q_rows, k, T, lc.num_heads, lc.num_kv_heads, lc.head_dim_k, scale);
  });
  std::vector<float> logits(c.vocab_size);  // [vocab] (unused)
  size_t done = 0;
  for (const auto& w : split_windows(ids, ctx, model.tokenizer->bos_id())) {
    profiling = profile_tokens > 0 && done < static_cast<size_t>(profile_tokens);
    prof.begin_sequence();
    fwd.forward(w, 0, false, logits.data());
    done += w.size() - 1;
    if (progress) progress(done, ids.size() - 1);
  }
  Calibration cal = Calibration::from_covariance(cov, model_fingerprint(model));
  if (profile_tokens > 0) cal.attention = prof.result();
  if (sensitivity_tokens > 0) measure_layer_sensitivity(model, pool, ids, ctx, sensitivity_tokens, cal);
  return cal;
}

}  // namespace slimkv
