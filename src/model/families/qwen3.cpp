// Family `qwen3`: Qwen3 dense (GGUF `qwen3`; HF Qwen3ForCausalLM). Head size from attention.key_length / head_dim
// (128, while dim / heads may differ), per-head RMSNorm of q and k (weights [head_dim] shared by the heads) after
// the projections and before NEOX RoPE.
#include "model/decoder_forward.h"
#include "model/family.h"

namespace slimkv {

std::vector<TensorName> qwen3_tensor_names() {  // shared with qwen3moe
  std::vector<TensorName> t = llama_style_tensor_names();
  const std::string b = "blk.{l}.", m = "model.layers.{l}.";
  set_tensor_name(t, {TensorRole::AttnQNorm, b + "attn_q_norm.weight", m + "self_attn.q_norm.weight"});
  set_tensor_name(t, {TensorRole::AttnKNorm, b + "attn_k_norm.weight", m + "self_attn.k_norm.weight"});
  return t;
}

namespace {

void read(const HParams& h, ModelConfig& c) {
  read_common_hparams(h, c);
  c.family = "qwen3";
  c.rope_layout = RopeLayout::RotateHalf;
}

}  // namespace

const ModelFamily& qwen3_family() {
  static const ModelFamily f{"qwen3", "qwen3", {"Qwen3ForCausalLM"},
                             "RoPE NEOX, GQA, per-head q/k RMSNorm, head size from key_length, SwiGLU", read,
                             qwen3_tensor_names(), pre_norm_layer};
  return f;
}

}  // namespace slimkv
