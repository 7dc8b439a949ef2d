// Family `qwen2`: Qwen2 / Qwen2.5 (GGUF `qwen2`; HF Qwen2ForCausalLM). A llama-style layer with biases on q, k
// and v (added right after each projection, before RoPE) and NEOX RoPE. Like llama.cpp, HF's sliding-window keys
// are ignored (Qwen2 releases ship with use_sliding_window false).
#include "model/decoder_forward.h"
#include "model/family.h"

namespace slimkv {
namespace {

void read(const HParams& h, ModelConfig& c) {
  read_common_hparams(h, c);
  c.family = "qwen2";
  c.rope_layout = RopeLayout::RotateHalf;
}

std::vector<TensorName> names() {
  std::vector<TensorName> t = llama_style_tensor_names();
  const std::string b = "blk.{l}.", m = "model.layers.{l}.";
  set_tensor_name(t, {TensorRole::AttnQBias, b + "attn_q.bias", m + "self_attn.q_proj.bias"});
  set_tensor_name(t, {TensorRole::AttnKBias, b + "attn_k.bias", m + "self_attn.k_proj.bias"});
  set_tensor_name(t, {TensorRole::AttnVBias, b + "attn_v.bias", m + "self_attn.v_proj.bias"});
  return t;
}

}  // namespace

const ModelFamily& qwen2_family() {
  static const ModelFamily f{"qwen2", "qwen2", {"Qwen2ForCausalLM"}, "RoPE NEOX, GQA, q/k/v biases, SwiGLU, YaRN",
                             read, names(), pre_norm_layer};
  return f;
}

}  // namespace slimkv
