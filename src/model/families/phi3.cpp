// Family `phi3`: Phi-3 / Phi-3.5 mini (GGUF `phi3`; HF Phi3ForCausalLM). Fused qkv (rows: Q, then K, then V) and
// fused gate_up (rows: gate, then up) projections, split into views at load (no copy); NEOX RoPE. Like llama.cpp,
// the sliding-window key is read and not applied (full causal attention). Long-context "longrope" factors are not
// supported (a clear error from the rope-scaling reader).
#include "model/decoder_forward.h"
#include "model/family.h"

namespace slimkv {
namespace {

void read(const HParams& h, ModelConfig& c) {
  read_common_hparams(h, c);
  c.family = "phi3";
  c.rope_layout = RopeLayout::RotateHalf;
}

std::vector<TensorName> names() {
  std::vector<TensorName> t = llama_style_tensor_names();
  const std::string b = "blk.{l}.", m = "model.layers.{l}.";
  for (TensorRole r : {TensorRole::AttnQ, TensorRole::AttnK, TensorRole::AttnV, TensorRole::FfnGate,
                       TensorRole::FfnUp}) {
    set_tensor_name(t, {r, "", ""});
  }
  set_tensor_name(t, {TensorRole::AttnQkv, b + "attn_qkv.weight", m + "self_attn.qkv_proj.weight"});
  set_tensor_name(t, {TensorRole::FfnGateUp, b + "ffn_up.weight", m + "mlp.gate_up_proj.weight"});
  return t;
}

}  // namespace

const ModelFamily& phi3_family() {
  static const ModelFamily f{"phi3", "phi3", {"Phi3ForCausalLM"}, "fused qkv and gate_up, RoPE NEOX, MHA/GQA",
                             read, names(), pre_norm_layer};
  return f;
}

}  // namespace slimkv
