// What a compression config needs from its calibration file, checked against the model (the fingerprint that binds
// calibration files to models): the low-rank K/V bases, and the attention profile behind the auto retention
// schedule.
// Must not know: requests or scheduling.
#pragma once
#include <string>
#include <vector>

#include "compress/calibration.h"
#include "compress/compression_config.h"
#include "model/model.h"

namespace slimkv {

std::string model_fingerprint(const Model& m);  // hyper-parameters + a hash of some weights
// Empty when the config has no low-rank part.
std::vector<LayerProjection> load_kv_projection(const CompressionConfig& cc, const Model& m, const KvLayout& layout);
// --kv-sparse-schedule auto: per-layer top-K budgets (kv_sparse_layer_topk) from the calibration file's attention
// profile — the full-attention layers share n_full x kv_sparse_topk tokens, in block_size steps, each at least
// sinks + recent window + one block. Other configs are returned as they are.
CompressionConfig resolve_sparse_schedule(const CompressionConfig& cc, const Model& m, int32_t block_size);
// The model's KV layout under cc (per-layer specs transformed by cc, auto budgets resolved: retention's per layer,
// select's per layer and KV head).
KvLayout model_kv_layout(const Model& m, int32_t block_size, const CompressionConfig& cc);

}  // namespace slimkv
