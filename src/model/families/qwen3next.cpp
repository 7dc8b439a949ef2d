// Family `qwen3next`: Qwen3-Next (GGUF `qwen3next`, llama.cpp's LLM_ARCH_QWEN3NEXT). Hybrid layers: Gated DeltaNet
// linear attention (model/blocks/gated_deltanet: a causal convolution and a per-head recurrent state, kept as one
// recurrent-state KV block per sequence) in every layer but each `full_attention_interval`-th (default 4; or the
// file's attention.recurrent_layers), which is gated full attention — q and k per-head RMSNorm, NEOX RoPE on the
// first rope.dimension_count dims, out = wo · (attention · σ(gate)) with the gate the second half of each head's
// q projection. Every FFN is a softmax top-k MoE (renormalised) plus a shared expert scaled by σ(w · x). The FFN's
// norm is the file's post_attention_norm. GGUF only (the converter's fused attn_qkv + attn_gate layout; the older
// ssm_in layout and Hugging Face checkpoints are not read); the MTP head (blocks after the trunk, nextn_predict_layers)
// is not run.
#include "model/blocks/gated_deltanet.h"
#include "model/decoder_forward.h"
#include "model/family.h"

namespace slimkv {
namespace {

// MoE on every layer: softmax top-k, renormalised, and one shared expert (its gate is a tensor).
void read_experts(const HParams& h, MoeConfig& m) {
  read_routed_experts(h, m);
  m.num_shared_experts = 1;
  m.shared_ffn_dim = h.integer(Hp::ExpertSharedFeedForwardLength, std::nullopt, 1, 1 << 18);
  m.norm_topk_prob = true;
  const float scale = h.real(Hp::ExpertWeightsScale, 0.0);
  m.weights_scale = scale != 0.0f ? scale : 1.0f;  // llama.cpp: 0 (absent) means no scaling
}

// The DeltaNet sizes (llama.cpp's ssm.* keys) and which layers are recurrent (`mtp`: the MTP blocks counted in
// block_count after the trunk, whose entries a recurrent_layers array also has).
void read_delta_net(const HParams& h, ModelConfig& c, int32_t mtp) {
  DeltaNetConfig& d = c.delta_net;
  d.conv_kernel = h.integer(Hp::SsmConvKernel, std::nullopt, 2, 64);
  d.head_k_dim = h.integer(Hp::SsmStateSize, std::nullopt, 1, 1024);
  d.num_k_heads = h.integer(Hp::SsmGroupCount, std::nullopt, 1, 1024);
  d.num_v_heads = h.integer(Hp::SsmTimeStepRank, std::nullopt, 1, 1024);
  const int32_t inner = h.integer(Hp::SsmInnerSize, std::nullopt, 1, 1 << 20);
  SLIMKV_CHECK(d.num_v_heads % d.num_k_heads == 0 && inner % d.num_v_heads == 0,
               "{}: '{}' = {} value heads must be a multiple of '{}' = {} key heads and divide '{}' = {}", h.source(),
               h.key_name(Hp::SsmTimeStepRank), d.num_v_heads, h.key_name(Hp::SsmGroupCount), d.num_k_heads,
               h.key_name(Hp::SsmInnerSize), inner);
  d.head_v_dim = inner / d.num_v_heads;
  std::vector<int32_t> recurrent;
  if (h.has(Hp::RecurrentLayers)) {
    recurrent = h.layer_ints(Hp::RecurrentLayers, c.num_layers + mtp);
  } else {
    const int32_t interval = h.integer(Hp::FullAttentionInterval, 4, 1, 1 << 16);
    for (int32_t l = 0; l < c.num_layers; ++l) recurrent.push_back((l + 1) % interval != 0);
  }
  for (int32_t l = 0; l < c.num_layers; ++l) {
    LayerConfig& lc = c.layers[l];
    lc.delta_net = recurrent[l] != 0;
    lc.attn_output_gate = !lc.delta_net;
    SLIMKV_CHECK(lc.delta_net || lc.head_dim_k == lc.head_dim_v, "{}: gated attention needs equal key and value "
                 "head sizes ('{}' = {}, '{}' = {})", h.source(), h.key_name(Hp::KeyLength), lc.head_dim_k,
                 h.key_name(Hp::ValueLength), lc.head_dim_v);
  }
}

void read(const HParams& h, ModelConfig& c) {
  read_common_hparams(h, c);
  c.family = "qwen3next";
  c.rope_layout = RopeLayout::RotateHalf;
  // llama.cpp's converter counts the MTP head's blocks in block_count (after the trunk): only the trunk runs.
  const int32_t mtp = h.integer(Hp::NextnPredictLayers, 0, 0, 16);
  SLIMKV_CHECK(mtp < c.num_layers, "{}: '{}' = {} leaves no trunk layer of {}", h.source(),
               h.key_name(Hp::NextnPredictLayers), mtp, c.num_layers);
  c.num_layers -= mtp;
  c.layers.resize(c.num_layers);
  read_experts(h, c.moe);
  for (LayerConfig& lc : c.layers) lc.moe = true;
  read_delta_net(h, c, mtp);
}

std::vector<TensorName> names() {
  using R = TensorRole;
  const std::string b = "blk.{l}.";
  auto gguf = [](TensorRole r, std::string name, Need need = Need::Required) {
    return TensorName{r, std::move(name), "", need};
  };
  return {
      gguf(R::TokEmbd, "token_embd.weight"),
      gguf(R::OutputNorm, "output_norm.weight"),
      gguf(R::Output, "output.weight", Need::Optional),
      gguf(R::AttnNorm, b + "attn_norm.weight"),
      // full-attention layers (bound by bind_attention below; q_norm / k_norm by the binder on every layer)
      gguf(R::AttnQ, b + "attn_q.weight"),
      gguf(R::AttnK, b + "attn_k.weight"),
      gguf(R::AttnV, b + "attn_v.weight"),
      gguf(R::AttnOut, b + "attn_output.weight"),
      gguf(R::AttnQNorm, b + "attn_q_norm.weight", Need::Optional),
      gguf(R::AttnKNorm, b + "attn_k_norm.weight", Need::Optional),
      // Gated DeltaNet layers
      gguf(R::AttnQkv, b + "attn_qkv.weight"),
      gguf(R::AttnGate, b + "attn_gate.weight"),
      gguf(R::SsmBetaAlpha, b + "ssm_ba.weight"),
      gguf(R::SsmConv1d, b + "ssm_conv1d.weight"),
      gguf(R::SsmDtBias, b + "ssm_dt.bias"),
      gguf(R::SsmA, b + "ssm_a"),
      gguf(R::SsmNorm, b + "ssm_norm.weight"),
      gguf(R::SsmOut, b + "ssm_out.weight"),
      // MoE with a gated shared expert
      gguf(R::FfnNorm, b + "post_attention_norm.weight"),
      gguf(R::MoeRouter, b + "ffn_gate_inp.weight"),
      gguf(R::MoeGateExps, b + "ffn_gate_exps.weight"),
      gguf(R::MoeUpExps, b + "ffn_up_exps.weight"),
      gguf(R::MoeDownExps, b + "ffn_down_exps.weight"),
      gguf(R::ShexpGate, b + "ffn_gate_shexp.weight"),
      gguf(R::ShexpUp, b + "ffn_up_shexp.weight"),
      gguf(R::ShexpDown, b + "ffn_down_shexp.weight"),
      gguf(R::ShexpGateInp, b + "ffn_gate_inp_shexp.weight"),
  };
}

void layer(DecoderForward& f, int32_t l) {
  const LayerWeights& w = f.weights(l);
  f.norm(f.normed(), f.residual(), w.attn_norm);
  if (f.model().config.layers[l].delta_net) {
    f.block<GatedDeltaNet>().run(f, l, f.normed(), f.block_out());
  } else {
    f.attention(l, f.normed(), f.block_out());
  }
  f.add_to_residual(f.block_out());
  f.norm(f.normed(), f.residual(), w.ffn_norm);
  f.ffn(l, f.normed(), f.block_out());
  f.add_to_residual(f.block_out());
}

std::vector<KvLayerSpec> layer_streams(const ModelConfig& c, int32_t l) {
  return c.layers[l].delta_net ? GatedDeltaNet::layer_streams(c, l) : attention_layer_streams(c, l);
}

// Recurrent layers bind the DeltaNet block; attention layers a q projection of [q | gate] per head, k, v, o and
// their (required here) q / k norms.
void bind_attention(LayerBinder& b, int32_t l) {
  using R = TensorRole;
  const LayerConfig& lc = b.config().layers[l];
  if (lc.delta_net) {
    GatedDeltaNet::bind(b, l);
    return;
  }
  LayerWeights& w = b.model().layers[l];
  const int64_t dim = b.config().dim;
  w.wq = b.matrix(R::AttnQ, l, 2 * static_cast<int64_t>(lc.q_dim()), dim);
  w.wk = b.matrix(R::AttnK, l, lc.k_dim(), dim);
  w.wv = b.matrix(R::AttnV, l, lc.v_dim(), dim);
  w.wo = b.matrix(R::AttnOut, l, dim, lc.attn_out_dim());
  SLIMKV_CHECK(b.find(R::AttnQNorm, l) && b.find(R::AttnKNorm, l), "{}: attention layer {} lacks attn_q_norm / "
               "attn_k_norm", b.source(), l);
}

}  // namespace

const ModelFamily& qwen3next_family() {
  static const ModelFamily f{"qwen3next", "qwen3next", {},
                             "hybrid: Gated DeltaNet linear attention (causal conv, gated delta rule, recurrent "
                             "state per sequence) and gated full attention (q/k norm, partial NEOX RoPE, sigmoid "
                             "output gate) every 4th layer; softmax top-k MoE with a sigmoid-gated shared expert",
                             read, names(), layer, layer_streams, bind_attention};
  return f;
}

}  // namespace slimkv
