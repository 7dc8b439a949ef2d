// The KV streams a model's layers write, flattened in layer order: what compression configs transform and KvLayout
// lays out. Each layer's list is declared by its blocks, through its family (ModelFamily::layer_streams); a family
// that declares none has one attention stream per layer, from the layer's config (heads, head sizes, window).
// Must not know: how a block reads or writes its streams.
#pragma once
#include <cstdint>
#include <vector>

#include "kv/kv_layout.h"
#include "model/model_config.h"

namespace slimkv {

// The one attention stream of a layer with plain (or latent) attention.
std::vector<KvLayerSpec> attention_layer_streams(const ModelConfig& c, int32_t layer);
// Every layer's streams, in layer order.
std::vector<KvLayerSpec> kv_layer_specs(const ModelConfig& c);
// The index in kv_layer_specs(c) of `layer`'s first stream (a layer's streams are consecutive).
int32_t first_kv_stream(const ModelConfig& c, int32_t layer);

}  // namespace slimkv
