#include "model/kv_streams.h"

#include "model/family.h"

namespace slimkv {
namespace {

std::vector<KvLayerSpec> layer_streams(const ModelConfig& c, int32_t layer) {
  const ModelFamily& f = family_by_name(c.family);
  return f.layer_streams ? f.layer_streams(c, layer) : attention_layer_streams(c, layer);
}

}  // namespace

std::vector<KvLayerSpec> attention_layer_streams(const ModelConfig& c, int32_t layer) {
  const LayerConfig& l = c.layers[layer];
  const int32_t w = l.sliding_window > 0 && l.sliding_window < c.max_seq_len ? l.sliding_window : 0;
  return {KvLayerSpec{l.num_kv_heads, l.head_dim_k, l.head_dim_v, w, l.mla}};
}

std::vector<KvLayerSpec> kv_layer_specs(const ModelConfig& c) {
  std::vector<KvLayerSpec> out;
  for (int32_t l = 0; l < c.num_layers; ++l) {
    for (const KvLayerSpec& s : layer_streams(c, l)) out.push_back(s);
  }
  return out;
}

int32_t first_kv_stream(const ModelConfig& c, int32_t layer) {
  int32_t first = 0;
  for (int32_t l = 0; l < layer; ++l) first += static_cast<int32_t>(layer_streams(c, l).size());
  return first;
}

}  // namespace slimkv
