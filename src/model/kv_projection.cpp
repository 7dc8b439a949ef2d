#include "model/kv_projection.h"

#include <cstring>

#include "compress/attention_profile.h"
#include "model/kv_streams.h"

namespace slimkv {

std::string model_fingerprint(const Model& m) {
  const ModelConfig& c = m.whole_config();  // under tensor parallelism too: calibration files are whole
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

namespace {

// cc's calibration file, refused unless it was made for this model (the whole model's fingerprint).
Calibration load_model_calibration(const CompressionConfig& cc, const Model& m) {
  Calibration cal = Calibration::load(cc.kv_calibration);
  const std::string fp = model_fingerprint(m);
  SLIMKV_CHECK(cal.model_fingerprint == fp, "{}: calibration file was made for another model (fingerprint {}, this "
               "model {})", cc.kv_calibration, cal.model_fingerprint, fp);
  return cal;
}

// Bases stored [whole_heads, rank, head_dim]: this rank's KV heads [first, first + n) (empty stays empty).
std::vector<float> rank_heads(const std::vector<float>& whole, int32_t whole_heads, int32_t first, int32_t n) {
  if (whole.empty() || (first == 0 && n == whole_heads)) return whole;
  const size_t per_head = whole.size() / whole_heads;
  return std::vector<float>(whole.begin() + first * per_head, whole.begin() + (first + n) * per_head);
}

int32_t model_layer(const KvLayout& layout, int32_t l) {  // the model layer a stream holds rows of
  return layout.layers[l].appended() ? layout.layers[l].source_layer : l;
}

}  // namespace

std::vector<LayerProjection> load_kv_projection(const CompressionConfig& cc, const Model& m, const KvLayout& layout) {
  if (!cc.low_rank() && !cc.select_sketch()) return {};
  Calibration cal = load_model_calibration(cc, m);
  // The calibration describes the whole model's heads; under tensor parallelism each rank keeps its own.
  KvLayout whole_layout = layout;
  for (int32_t l = 0; l < layout.num_layers() && m.unsharded_config; ++l) {
    const int32_t source = model_layer(layout, l);
    SLIMKV_CHECK(source < m.config.num_layers, "{} under tensor parallelism: stream {} is not one of the model's "
                 "layers", cc.low_rank() ? "low-rank K/V" : "--kv-select-index sketch", l);
    whole_layout.layers[l].num_kv_heads = m.unsharded_config->layers[source].num_kv_heads;
  }
  std::vector<LayerProjection> out =
      cc.low_rank() ? cal.projections(whole_layout) : std::vector<LayerProjection>(layout.num_layers());
  for (int32_t l = 0; l < layout.num_layers(); ++l) {  // a select index: the sketch is P k, P the leading directions
    const KvLayerGeometry& g = whole_layout.layers[l];
    if (g.kind != KvRecordKind::SelectIndex) continue;
    SLIMKV_CHECK(g.num_kv_heads == cal.num_kv_heads && g.head_dim_k == cal.head_dim, "{}: calibration is for {} KV "
                 "heads of dim {}, layer {} has {} of {}", cc.kv_calibration, cal.num_kv_heads, cal.head_dim,
                 g.source_layer, g.num_kv_heads, g.head_dim_k);
    if (cal.q_moment.empty()) {
      out[l].k = cal.key_basis(g.source_layer, g.k_dim);  // a plain PCA sketch: queries through the same basis
    } else {
      cal.query_aware_sketch(g.source_layer, g.k_dim, out[l].q, out[l].k);
    }
  }
  for (int32_t l = 0; l < layout.num_layers() && m.unsharded_config; ++l) {
    const int32_t heads = whole_layout.layers[l].num_kv_heads, n = layout.layers[l].num_kv_heads;
    const int32_t first = m.first_kv_head(model_layer(layout, l));
    for (std::vector<float>* b : {&out[l].k, &out[l].v, &out[l].q}) *b = rank_heads(*b, heads, first, n);
  }
  return out;
}

CompressionConfig resolve_sparse_schedule(const CompressionConfig& cc, const Model& m, int32_t block_size) {
  if (!cc.dynamic() || cc.kv_sparse_schedule != KvSparseSchedule::Auto || !cc.kv_sparse_layer_topk.empty()) return cc;
  SLIMKV_CHECK(!cc.kv_calibration.empty(), "--kv-sparse-schedule auto needs --kv-calibration FILE");
  const Calibration cal = load_model_calibration(cc, m);
  SLIMKV_CHECK(!cal.layer_sensitivity.empty(), "{}: no layer sensitivities in this calibration file (made by an "
               "older `slimkv calibrate`): recalibrate for --kv-sparse-schedule auto", cc.kv_calibration);
  const std::vector<KvLayerSpec> specs = kv_layer_specs(m.config);
  std::vector<float> sens;  // of the layers retention applies to
  std::vector<size_t> index;
  for (size_t l = 0; l < specs.size(); ++l) {
    if (specs[l].window_tokens > 0) continue;
    index.push_back(l);
    sens.push_back(cal.layer_sensitivity[l]);
  }
  CompressionConfig out = cc;
  out.kv_sparse_layer_topk.assign(specs.size(), 0);
  if (index.empty()) return out;
  const int32_t fixed = cc.kv_sink_tokens + cc.kv_recent_window;
  const int64_t selectable = static_cast<int64_t>(index.size()) * std::max(cc.kv_sparse_topk - fixed, block_size);
  const std::vector<int32_t> k = allocate_by_sensitivity(sens, selectable, block_size, block_size);
  for (size_t i = 0; i < index.size(); ++i) out.kv_sparse_layer_topk[index[i]] = fixed + k[i];
  return out;
}

namespace {

// --kv-sparse-schedule auto under select: each selecting layer's KV heads read a share of the context allocated
// from the calibration's per-head read profile (the same mean), as scales of the uniform budget.
void set_head_budgets(const CompressionConfig& cc, const Model& m, KvLayout& layout) {
  const Calibration cal = load_model_calibration(cc, m);
  const ModelConfig& whole = m.whole_config();
  std::vector<int32_t> layers;  // model layers that select (their stream index is their layer index)
  for (int32_t l = 0; l < layout.num_layers(); ++l) {
    if (layout.layers[l].select.on() && !layout.layers[l].appended() && l < whole.num_layers) layers.push_back(l);
  }
  if (layers.empty()) return;
  const double ctx = whole.max_seq_len;
  const double mean = cc.kv_select_fraction > 0 ? cc.kv_select_fraction : std::min(1.0, cc.kv_sparse_topk / ctx);
  const double floor = std::min(1.0, (cc.kv_sink_tokens + cc.kv_recent_window) / ctx);
  const std::vector<std::vector<float>> f = allocate_read_fractions(cal.attention, layers, mean, floor);
  for (size_t i = 0; i < layers.size(); ++i) {
    KvLayerGeometry& g = layout.layers[layers[i]];
    const int32_t first = m.first_kv_head(layers[i]);
    SLIMKV_CHECK(first + g.num_kv_heads <= static_cast<int32_t>(f[i].size()), "{}: calibration has {} KV heads, "
                 "layer {} needs {}", cc.kv_calibration, f[i].size(), layers[i], first + g.num_kv_heads);
    g.select.head_scale.clear();
    for (int32_t h = 0; h < g.num_kv_heads; ++h) g.select.head_scale.push_back(static_cast<float>(f[i][first + h] / mean));
  }
}

}  // namespace

KvLayout model_kv_layout(const Model& m, int32_t block_size, const CompressionConfig& cc) {
  KvLayout out = resolve_sparse_schedule(cc, m, block_size).layout(kv_layer_specs(m.config), block_size);
  if (cc.select() && cc.kv_sparse_schedule == KvSparseSchedule::Auto) set_head_budgets(cc, m, out);
  return out;
}

}  // namespace slimkv
