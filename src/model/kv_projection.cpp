#include "model/kv_projection.h"

#include <cstring>

namespace slimkv {

std::string model_fingerprint(const Model& m) {
  const ModelConfig& c = m.config;
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (int64_t v : {c.dim, c.hidden_dim, c.num_layers, c.num_heads, c.num_kv_heads, c.head_dim, c.vocab_size}) mix(v);
  std::vector<float> row(c.dim);
  for (int64_t r : {int64_t{0}, static_cast<int64_t>(c.vocab_size) / 2, static_cast<int64_t>(c.vocab_size) - 1}) {
    dequantize_row(m.tok_embd, r, row.data());
    for (float x : row) {
      uint32_t b;
      std::memcpy(&b, &x, 4);
      mix(b);
    }
  }
  return fmt::format("{:016x}:{}L{}x{}", h, c.num_layers, c.num_kv_heads, c.head_dim);
}

std::vector<LayerProjection> load_kv_projection(const CompressionConfig& cc, const Model& m, const KvLayout& layout) {
  if (!cc.low_rank()) return {};
  Calibration cal = Calibration::load(cc.kv_calibration);
  const std::string fp = model_fingerprint(m);
  SLIMKV_CHECK(cal.model_fingerprint == fp, "{}: calibration file was made for another model (fingerprint {}, this "
               "model {})", cc.kv_calibration, cal.model_fingerprint, fp);
  return cal.projections(layout);
}

}  // namespace slimkv
