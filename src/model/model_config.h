// A decoder's hyper-parameters, read from any format by its family (model/family.h) and validated once: the
// model-wide values and, per layer, what models vary (heads, K/V head sizes, sliding window, RoPE, FFN kind).
// Must not know: file formats or weights.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/pooling.h"

#include "kernels/rope.h"

namespace slimkv {

enum class FfnActivation : uint8_t { Silu, GeluTanh };  // gate activation of the gated MLP (SwiGLU / GeGLU)
// expert probabilities from the router logits (SqrtSoftplus: DeepSeek-V4's sqrt(softplus(logit)))
// SoftmaxWeight (gpt-oss): the top-k are chosen on the raw logits and their weights are the softmax over those k.
enum class MoeGating : uint8_t { Softmax, Sigmoid, SqrtSoftplus, SoftmaxWeight };

struct MoeConfig {
  int32_t num_experts = 0;           // 0 = no MoE layer in the model
  int32_t num_experts_used = 0;      // top-k
  int32_t expert_ffn_dim = 0;        // width of one expert
  int32_t num_shared_experts = 0;    // experts every token also goes through (their width: shared_ffn_dim)
  int32_t shared_ffn_dim = 0;
  bool norm_topk_prob = true;        // renormalise the selected experts' probabilities to sum 1
  float weights_scale = 1.0f;        // multiplies the selected weights
  MoeGating gating = MoeGating::Softmax;
  // Group-limited routing (DeepSeek-V3): experts in num_groups consecutive groups; a group scores the sum of its
  // two best selection scores; only the best groups_used groups' experts can be chosen. 1 = off.
  int32_t num_groups = 1, groups_used = 1;
  int32_t num_hash_layers = 0;       // DeepSeek-V4: the first layers route by a token id -> experts table
  float swiglu_limit = 0.0f;         // > 0: experts use silu(min(gate, L)) * clamp(up, -L, L) (DeepSeek-V4)
  float swiglu_limit_shared = 0.0f;  // ... the shared experts
  float swiglu_alpha = 0.0f;         // > 0 (gpt-oss): experts use g * sigmoid(alpha * g) * (u + 1), g = min(gate, L),
                                     // u = clamp(up, -L, L), L = swiglu_limit (ggml's swiglu_oai)
};

// DeepSeek-V4 (family deepseek4): per layer a compression ratio (LayerConfig::compress_ratio: 0 = the sliding
// window only, 4 = CSA with the lightning indexer, 128 = HCA); one shared K = V head with RoPE on its last
// rotary_dim dims; hyper-connections (hc_mult residual streams); grouped output LoRA.
struct Dsv4Config {
  int32_t hc_mult = 0;               // 0: not a DeepSeek-V4 model
  int32_t hc_sinkhorn_iters = 20;
  float hc_eps = 1e-6f;
  int32_t q_lora_rank = 0;
  int32_t o_groups = 1, o_lora_rank = 0;
  int32_t index_heads = 0, index_head_dim = 0, index_topk = 0;
  RopeConfig compress_rope;          // compressed layers (and their entries, indexer): own base, YaRN
  bool enabled() const { return hc_mult > 0; }
};

// Multi-head latent attention (DeepSeek-V2/V3): the cache holds, per token, one latent of kv_lora_rank values plus a
// decoupled RoPE key of rope_dim; queries are absorbed into the latent space (k_b), outputs leave it through v_b.
struct MlaConfig {
  int32_t q_lora_rank = 0;    // 0: a plain q projection (V2-Lite)
  int32_t kv_lora_rank = 0;   // 0: no MLA in the model
  int32_t nope_dim = 0;       // per-head query/key dims without RoPE
  int32_t rope_dim = 0;       // per-head RoPE dims (shared rope key)
  int32_t v_head_dim = 0;     // per-head value size after v_b
  bool enabled() const { return kv_lora_rank > 0; }
  int32_t q_head_dim() const { return nope_dim + rope_dim; }
};

// Gated DeltaNet linear attention (Qwen3-Next's recurrent layers, LayerConfig::delta_net; model/blocks/
// gated_deltanet.h): a causal convolution over [q | k | v] and a state [head_v, head_k] per value head, kept per
// sequence, not per token.
struct DeltaNetConfig {
  int32_t conv_kernel = 0;   // the convolution's taps (0: no such layer in the model)
  int32_t num_k_heads = 0;   // query / key heads
  int32_t num_v_heads = 0;   // value heads (a multiple of the key heads; value head h reads key head h / ratio)
  int32_t head_k_dim = 0, head_v_dim = 0;
  bool enabled() const { return conv_kernel > 0; }
  int32_t key_dim() const { return num_k_heads * head_k_dim; }
  int32_t value_dim() const { return num_v_heads * head_v_dim; }
  int32_t conv_dim() const { return 2 * key_dim() + value_dim(); }  // channels of [q | k | v]
  // One sequence's state: the convolution's last conv_kernel - 1 inputs, then every value head's matrix.
  int64_t state_floats() const {
    return static_cast<int64_t>(conv_kernel - 1) * conv_dim() + static_cast<int64_t>(num_v_heads) * head_v_dim * head_k_dim;
  }
};

struct LayerConfig {
  int32_t num_heads = 0, num_kv_heads = 0;
  int32_t head_dim_k = 0, head_dim_v = 0;  // query/key and value head sizes (they may differ)
  int32_t rotary_dim = 0;                  // leading dims of each q/k head that RoPE rotates
  int32_t sliding_window = 0;              // a query at p sees keys p0 with p - p0 < window; 0 = full attention
  RopeConfig rope;
  bool moe = false;                        // FFN: MoE (ModelConfig::moe) or dense of width ffn_dim
  bool mla = false;                        // attention: MLA (ModelConfig::mla); the cache's one "head" is
                                           // [latent | rope key] (head_dim_k) and its value the latent (head_dim_v)
  int32_t ffn_dim = 0;
  int32_t compress_ratio = 0;              // DeepSeek-V4: tokens pooled per compressed entry (0, 4 or 128)
  bool delta_net = false;                  // mixer: Gated DeltaNet linear attention (ModelConfig::delta_net)
  bool attn_output_gate = false;           // attention output *= sigmoid(gate), the gate the second half of each
                                           // head's q projection rows (Qwen3-Next: wq is [heads * 2 * head_dim, dim])
  int32_t q_dim() const { return num_heads * head_dim_k; }
  int32_t k_dim() const { return num_kv_heads * head_dim_k; }
  int32_t v_dim() const { return num_kv_heads * head_dim_v; }
  int32_t attn_out_dim() const { return num_heads * head_dim_v; }  // (MLA layers: heads * v_head_dim)
};

struct ModelConfig {
  std::string family = "llama";  // registry name (model/family.h)
  int32_t dim = 0;               // embedding width
  int32_t vocab_size = 0;
  int32_t num_layers = 0;
  // Multi-token-prediction heads after the trunk (`nextn_predict_layers`; Model::mtp), each one decoder layer of
  // the trunk's last layer's shape (layers.back()); 0: none, or the family skips them.
  int32_t num_mtp_layers = 0;
  int32_t max_seq_len = 0;       // trained context, in tokens
  float rms_eps = 1e-5f;
  RopeLayout rope_layout = RopeLayout::Interleaved;  // the family's: NORM (adjacent pairs) or NEOX (rotate half)
  FfnActivation activation = FfnActivation::Silu;
  float embed_scale = 1.0f;      // token embeddings are multiplied by this (Gemma: sqrt(dim))
  float attn_scale = 0.0f;       // softmax scale of q·k; 0 = 1/sqrt(head_dim_k)
  float final_logit_softcap = 0.0f;  // logits = c * tanh(logits / c) when > 0
  MoeConfig moe;
  MlaConfig mla;
  Dsv4Config dsv4;
  DeltaNetConfig delta_net;
  bool tie_word_embeddings = false;  // HF: the classifier is the embedding even when lm_head is stored
  Pooling pooling = Pooling::None;   // GGUF <arch>.pooling_type: how /v1/embeddings pools (None: not configured)
  std::string format;            // "llama2c", "gguf v3", "safetensors"
  std::vector<LayerConfig> layers;  // [num_layers]; filled from the uniform values below by finalize() if empty

  // Uniform values: what every layer has unless `layers` says otherwise (loaders of one-recipe formats set only
  // these; tools that need one number read them).
  int32_t hidden_dim = 0;        // dense FFN width
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;          // key (and, unless head_dim_v is set, value) head size
  int32_t head_dim_v = 0;        // 0 = head_dim
  int32_t rotary_dim = 0;        // 0 = head_dim
  float rope_theta = 10000.0f;

  int32_t q_dim() const { return num_heads * head_dim; }
  int32_t kv_dim() const { return num_kv_heads * head_dim; }
  // Fills `layers` from the uniform values when a loader did not set them per layer (idempotent).
  void finalize();
  void validate() const;     // throws Error naming the offending field (and layer)
  std::string summary() const;
  // True when every layer has the same heads, head sizes and window (what the low-rank calibration needs).
  bool uniform_kv() const;
  int32_t max_q_dim() const;
  int32_t max_kv_dim() const;       // max over layers of num_kv_heads * max(head_dim_k, head_dim_v)
  int32_t max_ffn_dim() const;
};

}  // namespace slimkv
