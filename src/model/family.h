// The architecture seam: a registry from a file's architecture name (GGUF `general.architecture`, HF
// `architectures[0]`) to a model family. A family is one file in families/ that declares its hyper-parameters
// (read through HParams, so once for both formats), its tensor names (GGUF and HF), its layer recipe — composed
// from DecoderForward's shared blocks and the blocks of model/blocks/ — and, where its blocks write more than one
// attention stream, each layer's KV streams (as plain KvLayerSpecs). Loaders are per format and fill one Model
// through the family's name table.
// Must not know: file formats (hparams.h, tensor_source.h) or how KV caches are paged.
#pragma once
#include <string>
#include <vector>

#include "kv/kv_layout.h"
#include "model/hparams.h"
#include "model/model_config.h"

namespace slimkv {

class DecoderForward;
class LayerBinder;  // weight_binder.h

enum class TensorRole {
  TokEmbd, OutputNorm, Output, RopeFreqs,
  AttnNorm, AttnQ, AttnK, AttnV, AttnQkv, AttnOut, AttnQBias, AttnKBias, AttnVBias, AttnOutBias, AttnQNorm,
  AttnKNorm, AttnPostNorm,
  FfnNorm, FfnGate, FfnUp, FfnDown, FfnGateUp, FfnPostNorm,
  MoeRouter, MoeGateExps, MoeUpExps, MoeDownExps, ShexpGate, ShexpUp, ShexpDown, MoeExpProbsB,
  MoeRouterBias, MoeGateExpsBias, MoeUpExpsBias, MoeDownExpsBias,
  // MLA
  AttnQA, AttnQANorm, AttnQB, AttnKvAMqa, AttnKvANorm, AttnKB, AttnVB,
  AttnKvB,  // MLA's fused up-projection (HF kv_b_proj, older GGUFs): per head [nope rows of K | v rows of V]
  // DeepSeek-V4
  HcHeadFn, HcHeadBase, HcHeadScale, HcAttnFn, HcAttnBase, HcAttnScale, HcFfnFn, HcFfnBase, HcFfnScale,
  AttnSinks, AttnKv, AttnKvNorm, AttnOutA, AttnOutB, CompWkv, CompWgate, CompApe, CompNorm,
  IdxProj, IdxQB, IdxCompWkv, IdxCompWgate, IdxCompApe, IdxCompNorm, MoeTid2Eid,
  // Gated DeltaNet (Qwen3-Next; AttnQkv holds its q | k | v) and the shared expert's sigmoid gate
  AttnGate, SsmBetaAlpha, SsmConv1d, SsmDtBias, SsmA, SsmNorm, SsmOut, ShexpGateInp,
  // A multi-token-prediction head (DeepSeek-V3's nextn layout; Model::mtp)
  NextnEhProj, NextnEnorm, NextnHnorm, NextnHeadNorm, NextnHead, NextnEmbed,
};

enum class Need : uint8_t { Required, Optional };
// What the loader does to a Hugging Face tensor so it means what the GGUF one does (llama.cpp's converter does the
// same): PermuteHeads reorders each head's rows from rotate-half to adjacent pairs (Llama's NORM RoPE); AddOne
// turns Gemma's (1 + w) norm weights into the plain multiplier.
enum class HfFix : uint8_t { None, PermuteHeads, AddOne };

// Names may hold {l} (layer) and {e} (expert). An empty name: this format has no such tensor. GGUF expert
// tensors are 3-D ([experts, rows, cols]); HF ones are one tensor per expert ({e} in the name).
struct TensorName {
  TensorRole role;
  std::string gguf, hf;
  Need need = Need::Required;
  HfFix hf_fix = HfFix::None;
};

using LayerRecipe = void (*)(DecoderForward& f, int32_t layer);

struct ModelFamily {
  std::string name;                   // "qwen3"
  std::string gguf_arch;              // general.architecture
  std::vector<std::string> hf_archs;  // config.json architectures
  std::string features;               // one line: what the family file implements
  void (*read_hparams)(const HParams& h, ModelConfig& c);  // fills c (model-wide and per layer)
  std::vector<TensorName> tensors;
  LayerRecipe layer;
  // The KV streams layer `l` writes, in the order its blocks read them; null = one attention stream from the
  // layer's config (model/kv_streams.h).
  std::vector<KvLayerSpec> (*layer_streams)(const ModelConfig& c, int32_t layer) = nullptr;
  // The weights of a layer's attention block when its block binds them itself (model/blocks/: latent or
  // compressed attention); null = the GQA attention's q, k, v, o (fused qkv where named).
  void (*bind_attention)(LayerBinder& b, int32_t layer) = nullptr;
  // Model-wide weights a family's blocks add (the head's hyper-connection mix); null = none.
  void (*bind_model)(LayerBinder& b) = nullptr;
};

const std::vector<const ModelFamily*>& model_families();
// Throw an Error that names the architecture and lists the supported ones.
const ModelFamily& family_for_gguf(const std::string& arch, const std::string& source);
const ModelFamily& family_for_hf(const std::vector<std::string>& archs, const std::string& source);
const ModelFamily& family_by_name(const std::string& name);

// Shared pieces for family files.
// The keys most decoders share: widths, heads (per layer where the file says so), head sizes (key_length /
// head_dim, else dim / heads), eps, RoPE base and scaling, context, vocabulary.
void read_common_hparams(const HParams& h, ModelConfig& c);
// RoPE scaling (GGUF rope.scaling.*, HF rope_scaling): linear, yarn, llama3 (per-dimension factors, HF only;
// GGUF files carry them as the rope_freqs tensor). Unknown types are an error naming them.
RopeConfig read_rope_scaling(const HParams& h, float base, int32_t rotary_dim);
// Routed experts' sizes (required): expert_count, expert_used_count, expert_feed_forward_length.
void read_routed_experts(const HParams& h, MoeConfig& m);
// DeepSeekMoE's sizes (DeepSeek-V2/V3/V4): routed experts, used, expert width, shared experts, weights scale, norm.
void read_deepseek_moe(const HParams& h, MoeConfig& m);
// Multi-token-prediction heads (`nextn_predict_layers`): a GGUF counts them in block_count after the trunk (as
// llama.cpp's converter does), a config.json does not; sets num_mtp_layers and leaves the trunk in num_layers.
void read_mtp_layers(const HParams& h, ModelConfig& c);
// llama.cpp's names for a llama-style decoder (llama, qwen2, qwen3, ...) with HF's LlamaForCausalLM names, and an
// MTP head's (DeepSeek-V3's `blk.{l}.nextn.*` / `model.layers.{l}.eh_proj`, ...; optional).
std::vector<TensorName> llama_style_tensor_names();
// Replaces the entry for `role` (adds it when absent); removes it when both names are empty.
void set_tensor_name(std::vector<TensorName>& t, TensorName name);
// The pre-norm decoder layer: x += attn(norm(x)); x += ffn(norm(x)) (llama, qwen*, phi3, mistral).
void pre_norm_layer(DecoderForward& f, int32_t layer);

}  // namespace slimkv
