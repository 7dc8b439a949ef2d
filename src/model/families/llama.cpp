// Family `llama`: Llama 2/3/3.1/3.2 and Mistral (GGUF `llama`; HF LlamaForCausalLM, MistralForCausalLM) and
// Mixtral-style experts where the file has them (expert_count > 0). RoPE NORM (adjacent pairs): HF q/k rows are
// permuted on load as llama.cpp's converter does. llama3 scaling: GGUF's `rope_freqs` tensor or HF rope_scaling.
// Like llama.cpp, a GGUF `llama` file's sliding-window key is ignored; an HF config's `sliding_window` applies.
#include "model/decoder_forward.h"
#include "model/family.h"

namespace slimkv {
namespace {

void read(const HParams& h, ModelConfig& c) {
  read_common_hparams(h, c);
  read_mtp_layers(h, c);  // an MTP head after the trunk, where the file has one
  c.family = "llama";
  c.rope_layout = RopeLayout::Interleaved;
  const int32_t experts = h.integer(Hp::ExpertCount, 0, 0, 4096);
  if (experts > 0) {
    c.moe.num_experts = experts;
    c.moe.num_experts_used = h.integer(Hp::ExpertUsedCount, std::nullopt, 1, experts);
    c.moe.expert_ffn_dim = c.hidden_dim;  // Mixtral: feed_forward_length is one expert's width
    c.moe.norm_topk_prob = true;
    for (auto& l : c.layers) l.moe = true;
  }
  if (!h.is_gguf() && h.has(Hp::SlidingWindow)) {
    const int32_t w = h.integer(Hp::SlidingWindow, 0, 0, 1 << 24);
    for (auto& l : c.layers) l.sliding_window = w < c.max_seq_len ? w : 0;
  }
}

std::vector<TensorName> names() {
  std::vector<TensorName> t = llama_style_tensor_names();
  const std::string b = "blk.{l}.", m = "model.layers.{l}.", moe = "model.layers.{l}.block_sparse_moe.";
  set_tensor_name(t, {TensorRole::AttnQ, b + "attn_q.weight", m + "self_attn.q_proj.weight", Need::Required,
                      HfFix::PermuteHeads});
  set_tensor_name(t, {TensorRole::AttnK, b + "attn_k.weight", m + "self_attn.k_proj.weight", Need::Required,
                      HfFix::PermuteHeads});
  set_tensor_name(t, {TensorRole::RopeFreqs, "rope_freqs.weight", "", Need::Optional});
  set_tensor_name(t, {TensorRole::AttnQBias, b + "attn_q.bias", m + "self_attn.q_proj.bias", Need::Optional,
                      HfFix::PermuteHeads});
  set_tensor_name(t, {TensorRole::AttnKBias, b + "attn_k.bias", m + "self_attn.k_proj.bias", Need::Optional,
                      HfFix::PermuteHeads});
  set_tensor_name(t, {TensorRole::AttnVBias, b + "attn_v.bias", m + "self_attn.v_proj.bias", Need::Optional});
  set_tensor_name(t, {TensorRole::AttnOutBias, b + "attn_output.bias", m + "self_attn.o_proj.bias", Need::Optional});
  set_tensor_name(t, {TensorRole::MoeRouter, b + "ffn_gate_inp.weight", moe + "gate.weight"});
  set_tensor_name(t, {TensorRole::MoeGateExps, b + "ffn_gate_exps.weight", moe + "experts.{e}.w1.weight"});
  set_tensor_name(t, {TensorRole::MoeUpExps, b + "ffn_up_exps.weight", moe + "experts.{e}.w3.weight"});
  set_tensor_name(t, {TensorRole::MoeDownExps, b + "ffn_down_exps.weight", moe + "experts.{e}.w2.weight"});
  return t;
}

}  // namespace

const ModelFamily& llama_family() {
  static const ModelFamily f{"llama", "llama", {"LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM"},
                             "RoPE NORM, GQA, SwiGLU, optional biases, llama3/linear/YaRN scaling, rope_freqs, "
                             "Mixtral experts",
                             read, names(), pre_norm_layer};
  return f;
}

}  // namespace slimkv
