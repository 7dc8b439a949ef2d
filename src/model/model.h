// A loaded decoder model: its family's validated hyper-parameters, weight views into mmap'ed files, and its
// tokenizer. Owns: the mapped files and any converted copies (e.g. BF16 -> F32, norms -> F32, permuted rows).
// Must not know: KV caches, requests or sampling.
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/check.h"
#include "kernels/matmul.h"
#include "model/collectives.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"

namespace slimkv {

// Which slice of a tensor-parallel model this process holds: rank of ranks (1 = the whole model).
struct TensorShard {
  int32_t rank = 0, ranks = 1;  // T ranks split attention and dense FFNs (the whole MPI job)
  // Expert parallelism (E divides T, as in vLLM, SGLang and TensorRT-LLM): the routed experts are spread over E
  // groups of T / E consecutive ranks (Ne / E experts each) and each expert is column-split over its group's ranks.
  // E = T: every rank its experts whole; E = 1: every expert split over every rank.
  int32_t expert_groups = 1;
  // The expert combine: false — an all-reduce over every rank (each rank's partial [tokens, dim]); true — each
  // rank sends only the tokens that reached its experts to the token's owner (MPI_Alltoallv), then an all-gather;
  // shared experts are then kept whole and run by each token's owner.
  bool expert_all_to_all = false;
  bool vocab_split = false;  // the output head holds this rank's vocab / ranks rows; logits are all-gathered
  int32_t expert_group() const { return rank / (ranks / expert_groups); }
  int32_t expert_slice() const { return rank % (ranks / expert_groups); }  // this rank's column share of an expert
  int32_t expert_slices() const { return ranks / expert_groups; }
};

// One layer's weights; a null pointer / empty view means "this layer has none" (the family's name table says
// which are required). Shapes use the layer's LayerConfig: q_dim, k_dim, v_dim, out = attn_out_dim.
struct LayerWeights {
  const float* attn_norm = nullptr;       // [dim]
  WeightView wq, wk, wv, wo;              // [q_dim, dim], [k_dim, dim], [v_dim, dim], [dim, out]
  const float *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr;  // biases [q_dim] [k_dim] [v_dim] [dim]
  const float *q_norm = nullptr, *k_norm = nullptr;  // per-head RMSNorm [head_dim_k], shared by the heads
  const float* attn_post_norm = nullptr;  // [dim] on the attention output before the residual (Gemma)
  const float* ffn_norm = nullptr;        // [dim]
  WeightView w1, w2, w3;                  // dense: gate [ffn, dim], down [dim, ffn], up [ffn, dim]
  const float* ffn_post_norm = nullptr;   // [dim] on the FFN output before the residual (Gemma)
  // MoE (LayerConfig::moe): router and one view per expert.
  WeightView router;                      // [num_experts, dim]
  std::vector<WeightView> exp_gate, exp_up, exp_down;  // [num_experts] of [eff, dim], [eff, dim], [dim, eff]
  WeightView shexp_gate, shexp_up, shexp_down;         // shared experts, fused: [sff, dim], [sff, dim], [dim, sff]
  const float* exp_probs_b = nullptr;                  // [num_experts] selection bias (DeepSeek-V3), or null
  const float* router_b = nullptr;                     // [num_experts] router logit bias (gpt-oss), or null
  const float *exp_gate_b = nullptr, *exp_up_b = nullptr;  // [num_experts, eff] expert biases (gpt-oss), or null
  const float* exp_down_b = nullptr;                   // [num_experts, dim]
  // MLA (LayerConfig::mla): q = wq_b · norm(wq_a · x) (or wq · x), [latent | rope key] = wkv_a · x.
  WeightView wq_a, wq_b, wkv_a;                        // [q_lora, dim], [heads * (nope + rope), q_lora],
                                                       // [kv_lora + rope, dim]
  const float *q_a_norm = nullptr, *kv_a_norm = nullptr;  // [q_lora], [kv_lora]
  std::vector<WeightView> k_b, v_b;                    // per head: [kv_lora, nope] (absorbs q), [v, kv_lora]
  // DeepSeek-V4 (Dsv4Config): wq_a, q_a_norm, wq_b as above; kv = norm(wkv · x) (one K = V head, D values)
  WeightView wkv;                                      // [D, dim]
  const float* kv_norm = nullptr;                      // [D]
  const float* attn_sinks = nullptr;                   // [heads] learned sink logits (DeepSeek-V4, gpt-oss)
  std::vector<WeightView> wo_a;                        // [o_groups] of [o_lora, heads_per_group * D]
  WeightView wo_b;                                     // [dim, o_groups * o_lora]
  WeightView hc_attn_fn, hc_ffn_fn;                    // [(2 + hc) * hc, hc * dim]
  const float *hc_attn_base = nullptr, *hc_attn_scale = nullptr;  // [(2 + hc) * hc], [3]
  const float *hc_ffn_base = nullptr, *hc_ffn_scale = nullptr;
  // compressor (ratio > 0): coff = 2 on CSA layers (overlapping groups), 1 on HCA
  WeightView comp_wkv, comp_wgate;                     // [coff * D, dim]
  const float* comp_ape = nullptr;                     // [ratio, coff * D] learned position embedding
  const float* comp_norm = nullptr;                    // [D]
  // lightning indexer (ratio 4)
  WeightView idx_proj, idx_q_b;                        // [index_heads, dim], [index_heads * index_dim, q_lora]
  WeightView idx_comp_wkv, idx_comp_wgate;             // [2 * index_dim, dim]
  const float* idx_comp_ape = nullptr;                 // [4, 2 * index_dim]
  const float* idx_comp_norm = nullptr;                // [index_dim]
  const int32_t* tid2eid = nullptr;                    // hash-routed layers: [vocab, experts_used]
  const float* shexp_gate_inp = nullptr;               // [dim] shared expert output *= sigmoid(this · x), or null
  // Gated DeltaNet (DeltaNetConfig: conv_dim = 2 key_dim + value_dim, v_heads)
  WeightView ssm_qkv, ssm_z, ssm_ba;                   // [conv_dim, dim], [value_dim, dim], [2 * v_heads, dim]
  WeightView ssm_out;                                  // [dim, value_dim]
  const float* ssm_conv = nullptr;                     // [conv_dim, conv_kernel] causal depthwise convolution
  const float *ssm_dt_bias = nullptr, *ssm_a = nullptr;  // [v_heads], [v_heads] (a = -exp(A_log))
  const float* ssm_norm = nullptr;                     // [head_v_dim] the gated RMSNorm's weight

  // Every matrix of the layer, in the order a forward pass reads them (weight packing walks it).
  std::vector<WeightView*> matrices();
};

// A multi-token-prediction head (DeepSeek-V3's nextn layout, `blk.{num_layers + i}.nextn.*`): from the trunk's
// final-normed hidden state h_i and the next token x_{i+1}, z = eh_proj([enorm(embed(x_{i+1})) | hnorm(h_i)]) runs
// one decoder layer (the trunk's last layer's shape), then head_norm and the head give x_{i+2}'s logits.
struct MtpHeadWeights {
  LayerWeights layer;
  WeightView eh_proj;                                                    // [dim, 2 * dim]
  const float *enorm = nullptr, *hnorm = nullptr, *head_norm = nullptr;  // [dim] each
  WeightView embed, head;  // [vocab, dim]: the head's own, or empty (the trunk's tok_embd / output)
};

struct Model {
  ModelConfig config;
  WeightView tok_embd;               // [vocab, dim]
  std::vector<LayerWeights> layers;  // [num_layers]
  std::vector<MtpHeadWeights> mtp;   // [config.num_mtp_layers] (not run by the trunk's forward)
  // Set on the one-layer model an MTP head runs as (model/mtp_head.h): its input rows are eh_proj's of the token's
  // embedding and ForwardBatch::input_hidden, not the embedding alone.
  const MtpHeadWeights* mtp_input = nullptr;
  const float* final_norm = nullptr; // [dim]
  WeightView output;                 // [vocab, dim] (may alias tok_embd)
  bool output_tied = false;          // output is tok_embd (packing may still give it its own copy)
  WeightView hc_head_fn;             // DeepSeek-V4: [hc, hc * dim] the head's stream mix
  const float *hc_head_base = nullptr, *hc_head_scale = nullptr;  // [hc], [1]
  std::unique_ptr<Tokenizer> tokenizer;
  std::string path;
  std::string chat_template;         // GGUF tokenizer.chat_template / tokenizer_config.json (Jinja), or empty

  // Tensor parallelism (model/tensor_shard.h): this process's slice of every split layer, and the collectives
  // that join the slices' partial sums (null: one process holds the whole model).
  TensorShard shard;
  std::shared_ptr<Collectives> collectives;
  // What slicing changed that whole-model files (calibration: per-head bases, the fingerprint) map back through:
  // the config before slicing, and per layer the first of the model's KV heads this rank holds. Unset / empty in
  // one process.
  std::optional<ModelConfig> unsharded_config;
  std::vector<int32_t> kv_head_first;
  const ModelConfig& whole_config() const { return unsharded_config ? *unsharded_config : config; }
  int32_t first_kv_head(int32_t layer) const { return kv_head_first.empty() ? 0 : kv_head_first[layer]; }

  // Storage the views point into.
  std::vector<std::shared_ptr<const void>> keepalive;
  std::vector<std::unique_ptr<std::vector<float>>> owned_f32;
  const float* own_f32(std::vector<float> v);  // keeps v alive, returns its data
};

struct ModelLoadOptions {
  std::string model_path;      // llama2.c .bin, .gguf, or a Hugging Face directory
  std::string tokenizer_path;  // llama2.c tokenizer.bin (optional: searched beside the model)
  TensorShard shard;           // which slice to keep (default: the whole model)
};

// Detects the format and loads. Throws Error with one clear line on any problem.
std::unique_ptr<Model> load_model(const ModelLoadOptions& opts);

// Format-specific loaders (model_loader.cpp dispatches).
std::unique_ptr<Model> load_llama2c_model(const std::string& path, const std::string& tokenizer_path);
// Weights only (no tokenizer), straight from bytes: what the llama2.c fuzz target exercises.
std::unique_ptr<Model> llama2c_model_from_bytes(std::span<const uint8_t> bytes, const std::string& what);
std::unique_ptr<Model> load_gguf_model(const std::string& path);
// Weights only (no tokenizer, no packing) from a parsed GGUF: what the GGUF fuzz target exercises.
std::unique_ptr<Model> gguf_model_weights(std::shared_ptr<const class GgufFile> g);
// A Hugging Face directory: config.json, model.safetensors or model.safetensors.index.json (sharded), and
// tokenizer.json (optional: without it the model runs on token ids only).
std::unique_ptr<Model> load_hf_model(const std::string& dir);

// Checks a weight's shape and dtype; returns the view (shared by loaders).
WeightView make_weight(DType dtype, int64_t rows, int64_t cols, const void* data, uint64_t size_bytes,
                       const std::string& name);

}  // namespace slimkv
