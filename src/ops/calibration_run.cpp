#include "ops/calibration_run.h"

#include "model/kv_projection.h"
#include "runner/sequence_forward.h"

namespace slimkv {

Calibration calibrate_model(const Model& model, ThreadPool* pool, const std::vector<int32_t>& ids, int32_t ctx,
                            const std::function<void(size_t, size_t)>& progress) {
  const ModelConfig& c = model.config;
  SLIMKV_CHECK(ids.size() >= 2, "too little text to calibrate on ({} tokens)", ids.size());
  SequenceForward fwd(model, pool, ctx);
  KvCovariance cov(c.num_layers, c.num_kv_heads, c.head_dim);
  fwd.forward_pass().set_kv_observer([&](int32_t l, const float* k, const float* v, int32_t T) { cov.add(l, k, v, T); });
  std::vector<float> logits(c.vocab_size);  // [vocab] (unused)
  size_t done = 0;
  for (const auto& w : split_windows(ids, ctx, model.tokenizer->bos_id())) {
    fwd.forward(w, 0, false, logits.data());
    done += w.size() - 1;
    if (progress) progress(done, ids.size() - 1);
  }
  return Calibration::from_covariance(cov, model_fingerprint(model));
}

}  // namespace slimkv
