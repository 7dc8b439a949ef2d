// Family `qwen3moe`: Qwen3 MoE (GGUF `qwen3moe`; HF Qwen3MoeForCausalLM). Qwen3 attention; every layer's FFN is a
// softmax-routed mixture: p = softmax(router · x) over all experts, the top-k kept and (norm_topk_prob, always on in
// llama.cpp) renormalised, out = sum_k p_k · down_k(silu(gate_k · x) * up_k · x). All layers are MoE (HF configs
// with mlp_only_layers / decoder_sparse_step != 1 are not supported).
#include "model/decoder_forward.h"
#include "model/family.h"

namespace slimkv {

std::vector<TensorName> qwen3_tensor_names();

namespace {

void read(const HParams& h, ModelConfig& c) {
  read_common_hparams(h, c);
  c.family = "qwen3moe";
  c.rope_layout = RopeLayout::RotateHalf;
  read_routed_experts(h, c.moe);
  c.moe.norm_topk_prob = h.is_gguf() ? true : h.boolean(Hp::ExpertWeightsNorm).value_or(true);
  for (auto& l : c.layers) l.moe = true;
}

std::vector<TensorName> names() {
  std::vector<TensorName> t = qwen3_tensor_names();
  const std::string b = "blk.{l}.", m = "model.layers.{l}.mlp.";
  for (TensorRole r : {TensorRole::FfnGate, TensorRole::FfnUp, TensorRole::FfnDown}) set_tensor_name(t, {r, "", ""});
  set_tensor_name(t, {TensorRole::MoeRouter, b + "ffn_gate_inp.weight", m + "gate.weight"});
  set_tensor_name(t, {TensorRole::MoeGateExps, b + "ffn_gate_exps.weight", m + "experts.{e}.gate_proj.weight"});
  set_tensor_name(t, {TensorRole::MoeUpExps, b + "ffn_up_exps.weight", m + "experts.{e}.up_proj.weight"});
  set_tensor_name(t, {TensorRole::MoeDownExps, b + "ffn_down_exps.weight", m + "experts.{e}.down_proj.weight"});
  return t;
}

}  // namespace

const ModelFamily& qwen3moe_family() {
  static const ModelFamily f{"qwen3moe", "qwen3moe", {"Qwen3MoeForCausalLM"},
                             "qwen3 attention, softmax top-k router with norm_topk_prob, 3-D expert tensors", read,
                             names(), pre_norm_layer};
  return f;
}

}  // namespace slimkv
