// The KV memory planner (seed 2.1 / 3.2): KV bytes per token per layer, KV cache, weights, activations and the
// total for a context and batch, before and after compression, and what fits in a memory budget.
// Pure arithmetic on plain structs, exact in int64 with overflow checks. Must not know: files, engines or HTTP.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compress/compression_config.h"

namespace slimkv {

struct ModelShape {
  int64_t num_layers = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0;
  int64_t hidden_dim = 0, ffn_dim = 0, vocab_size = 0;
  int64_t num_params = 0;                 // 0 = estimated from the shape (Llama layout)
  std::string weights_dtype = "f16";      // f32 | f16 | bf16 | q8_0 | q4_0
  std::vector<KvLayerSpec> kv_layers;     // per-layer KV specs (a model file's); empty = uniform from the above
  int64_t mla_qk_head_dim = 0, mla_v_head_dim = 0;  // MLA: per-head K and V sizes once decompressed (0 = not MLA),
                                                    // for the comparison with the same model's MHA-equivalent cache
  void validate() const;
  bool mla() const { return mla_qk_head_dim > 0; }
  // Bytes per token and layer of an MHA cache of the same model: heads x (qk + v) x dtype bytes (MLA shapes).
  int64_t mha_equivalent_bytes_per_token_layer(int64_t dtype_bytes) const {
    return num_heads * (mla_qk_head_dim + mla_v_head_dim) * dtype_bytes;
  }
  std::vector<KvLayerSpec> layer_specs() const;  // kv_layers, or num_layers uniform full-attention layers
  int64_t estimated_params() const;       // embeddings + output + layers (attention with GQA, SwiGLU MLP, norms)
  int64_t hidden() const { return hidden_dim > 0 ? hidden_dim : num_heads * head_dim; }
  int64_t ffn() const { return ffn_dim > 0 ? ffn_dim : (8 * hidden() / 3 + 255) / 256 * 256; }
};

struct PlanInput {
  ModelShape shape;
  int64_t context_tokens = 0;
  int64_t batch = 1;
  std::string baseline_kv_dtype = "f16";  // the uncompressed cache the seed's formula assumes
  CompressionConfig compress;             // "after"; enabled = false: no after column
  int64_t max_batched_tokens = 512;       // activations are sized for one step of this many tokens
  double memory_gib = 0;                  // 0 = no budget given
};

struct MemoryBreakdown {
  std::vector<int64_t> kv_bytes_per_token_layer;  // [layers]
  int64_t kv_bytes_per_token = 0;       // summed over layers
  std::vector<int64_t> kv_tokens_per_layer;  // [layers] tokens a sequence holds in each layer (windows and
                                            // retention keep fewer than the context)
  int64_t kv_tokens_per_seq = 0;        // the most any layer holds
  int64_t kv_bytes_per_seq = 0;         // summed over layers
  int64_t kv_bytes = 0, weights_bytes = 0, activation_bytes = 0, total_bytes = 0;
  double kv_share() const { return total_bytes ? static_cast<double>(kv_bytes) / static_cast<double>(total_bytes) : 0; }
};

struct PlanResult {
  MemoryBreakdown before, after;        // after == before when compression is off
  bool compressed = false;
  int64_t seed_formula_bytes = 0;       // 2 × layers × *attention* heads × head_dim × ctx × batch × bytes
  double overall_reduction = 0;         // 1 − after.total / before.total
  int64_t max_batch_before = -1, max_batch_after = -1;      // at context_tokens, within memory_gib (-1: no budget)
  int64_t max_context_before = -1, max_context_after = -1;  // at batch, within memory_gib (-2: no limit)
  std::string activation_assumption;    // how activation_bytes was estimated, for the report
};

// Throws Error on bad input or when a figure does not fit in int64 bytes.
PlanResult make_plan(const PlanInput& in);
int64_t kv_dtype_bytes_x2(const std::string& dtype);  // twice the bytes per element (q4 = 1), for exact math

struct Scenario {
  std::string name;
  int64_t context_tokens, batch;
};
std::vector<Scenario> seed_scenarios();  // 4K × 8, 32K × 2, 128K × 1 (seed 3.2's short / long / very long)

// Shapes of published configs, for sizing a deployment without the files: deepseek-v3 (also R1), kimi-k2,
// deepseek-v2-lite (MLA: one latent of kv_lora + rope values per token and layer). Throws on an unknown name.
ModelShape preset_shape(const std::string& name);
std::vector<std::string> preset_names();

}  // namespace slimkv
