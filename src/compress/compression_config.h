// The one validated configuration of KV-cache compression (flags map 1:1 to fields; also loadable from a JSON
// file whose keys are the flag names with underscores). Today: storage dtype (f32/f16/int8/int4), the Hadamard
// rotation before quantizing, and calibrated low-rank K/V latents per layer. Must not know: requests or kernels.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kv/kv_layout.h"

namespace slimkv {

struct CompressionConfig {
  bool enabled = true;                   // --kv-cache-compression on|off (off: plain f32 cache, bit-identical)
  std::string kv_cache_dtype = "auto";   // --kv-cache-dtype auto|f32|f16|int8|int4 (auto = f32)
  std::string kv_quant_rotation = "auto";  // --kv-quant-rotation auto|hadamard|none (auto: hadamard for int8/int4)
  int32_t kv_compression_rank = 0;       // --kv-compression-rank R: latent size of K and V per head (0 = full)
  int32_t kv_compression_rank_k = 0;     // --kv-compression-rank-k: keys only (overrides R)
  int32_t kv_compression_rank_v = 0;     // --kv-compression-rank-v: values only (overrides R)
  std::vector<int32_t> kv_layer_compress_ratio;  // --kv-layer-compress-ratio r1,r2,..: rank = head_dim / r_l
  std::string kv_calibration;            // --kv-calibration FILE from `slimkv calibrate` (needed for low rank)
  std::string kv_sparse_mode = "off";    // --kv-sparse-mode off|static|dynamic (static: sinks + recent window,
                                         // StreamingLLM; dynamic: + the most-attended blocks up to the top-K budget)
  int32_t kv_sparse_topk = 0;            // --kv-sparse-topk K: tokens kept in all (sinks + window + top blocks)
  int32_t kv_sink_tokens = 4;            // --kv-sink-tokens S
  int32_t kv_recent_window = 0;          // --kv-recent-window W (tokens, including the current one)
  std::string kv_evict_policy = "drop";  // --kv-evict-policy drop|merge (merge: evicted blocks fold into summaries)
  std::string kv_sparse_schedule = "uniform";  // --kv-sparse-schedule uniform|pyramid|auto: per-layer top-K budgets
                                               // (auto: from the calibration's attention profile; resolved into
                                               // kv_sparse_layer_topk when a model's layout is made)
  std::vector<int32_t> kv_sparse_layer_topk;   // --kv-sparse-layer-topk k1,k2,..: explicit per-layer budgets

  // Throws one clear Error per contradiction against the model's per-layer KV specs.
  void validate(const std::vector<KvLayerSpec>& layers) const;
  void validate(int32_t num_layers, int32_t head_dim) const;  // a uniform model of that shape
  bool low_rank() const;
  bool sparse() const { return enabled && kv_sparse_mode == "static"; }  // the position-window mask
  bool dynamic() const { return enabled && kv_sparse_mode == "dynamic"; }
  bool merge() const { return dynamic() && kv_evict_policy == "merge"; }
  int32_t sink_tokens() const { return sparse() ? kv_sink_tokens : 0; }
  int32_t window_tokens() const { return sparse() ? kv_recent_window : 0; }
  int32_t rank_k(int32_t layer, int32_t head_dim) const;
  int32_t rank_v(int32_t layer, int32_t head_dim) const;
  KvDtype dtype() const;
  bool rotate() const;
  // The per-layer storage and block-table plan for a model: a transform of its specs (dtype, rank, rotation on
  // every layer; static or dynamic retention on the full-attention layers, which keep their own block tables),
  // grouped (KvLayout::assign_groups).
  KvLayout layout(const std::vector<KvLayerSpec>& layers, int32_t block_size) const;
  KvLayout layout(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim, int32_t block_size) const;
  // Dynamic mode: each layer's retention budget in tokens by kv_sparse_schedule (0 for sliding-window layers); the
  // mean over the full-attention layers is kv_sparse_topk.
  std::vector<int32_t> layer_topk(const std::vector<KvLayerSpec>& layers) const;
  std::string fingerprint() const;  // goes into the prefix-cache salt
  // Loads a JSON object {"kv_cache_dtype": "int8", ...}; unknown keys are an error that names them.
  static CompressionConfig from_json_file(const std::string& path);
  // The non-default fields as that JSON object (what from_json_file reads back to an equal config).
  std::string to_json(const std::string& description = "") const;
};

// "layer | dtype | rotation | bytes/token | vs f16" lines for the start-up log and the eval report.
std::string describe_plan(const KvLayout& layout);

}  // namespace slimkv
