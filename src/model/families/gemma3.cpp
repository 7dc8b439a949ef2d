// Family `gemma3`: Gemma 3 text (GGUF `gemma3`; HF Gemma3ForCausalLM, and the text model of
// Gemma3ForConditionalGeneration's config). Embeddings scaled by sqrt(dim); sandwich norms (pre and post around
// attention and FFN); per-head q/k RMSNorm; GeGLU (tanh); q scaled by 1/sqrt(head size) (HF:
// query_pre_attn_scalar^-1/2; the 27B GGUF: 1/sqrt(dim/heads)); 5 of every 6 layers local (layer l is local iff
// l % pattern < pattern - 1) with their own window and RoPE base (no scaling), the rest global with rope scaling;
// final logit softcap when the file has one. GGUF norm weights already hold (1 + w); HF ones get the 1 added.
#include <cmath>

#include "model/decoder_forward.h"
#include "model/family.h"

namespace slimkv {
namespace {

void read(const HParams& h, ModelConfig& c) {
  read_common_hparams(h, c);
  c.family = "gemma3";
  c.rope_layout = RopeLayout::RotateHalf;
  c.activation = FfnActivation::GeluTanh;
  c.embed_scale = std::sqrt(static_cast<float>(c.dim));
  if (h.has(Hp::QueryPreAttnScalar)) {
    c.attn_scale = 1.0f / std::sqrt(h.real(Hp::QueryPreAttnScalar));
  } else {
    const bool is_27b = h.is_gguf() && c.num_layers == 62;  // llama.cpp's LLM_TYPE_27B rule
    c.attn_scale = 1.0f / std::sqrt(static_cast<float>(is_27b ? c.dim / c.num_heads : c.head_dim));
  }
  c.final_logit_softcap = h.real(Hp::FinalLogitSoftcap, 0.0);
  const int32_t window = h.integer(Hp::SlidingWindow, std::nullopt, 1, 1 << 24);
  const int32_t pattern = h.integer(Hp::SlidingWindowPattern, 6, 1, 1024);
  RopeConfig local;
  local.base = h.real(Hp::RopeFreqBaseSwa, 10000.0);
  for (int32_t l = 0; l < c.num_layers; ++l) {
    if (l % pattern < pattern - 1) {
      c.layers[l].sliding_window = window;
      c.layers[l].rope = local;
    }
  }
}

std::vector<TensorName> names() {
  std::vector<TensorName> t = llama_style_tensor_names();
  const std::string b = "blk.{l}.", m = "model.layers.{l}.";
  auto norm = [&](TensorRole r, const std::string& g, const std::string& hf) {
    set_tensor_name(t, {r, g, hf, Need::Required, HfFix::AddOne});
  };
  norm(TensorRole::OutputNorm, "output_norm.weight", "model.norm.weight");
  norm(TensorRole::AttnNorm, b + "attn_norm.weight", m + "input_layernorm.weight");
  norm(TensorRole::AttnQNorm, b + "attn_q_norm.weight", m + "self_attn.q_norm.weight");
  norm(TensorRole::AttnKNorm, b + "attn_k_norm.weight", m + "self_attn.k_norm.weight");
  norm(TensorRole::AttnPostNorm, b + "post_attention_norm.weight", m + "post_attention_layernorm.weight");
  norm(TensorRole::FfnNorm, b + "ffn_norm.weight", m + "pre_feedforward_layernorm.weight");
  norm(TensorRole::FfnPostNorm, b + "post_ffw_norm.weight", m + "post_feedforward_layernorm.weight");
  return t;
}

// x += post_norm(attn(norm(x))); x += post_norm(ffn(norm(x)))
void layer(DecoderForward& f, int32_t l) {
  const LayerWeights& w = f.weights(l);
  f.norm(f.normed(), f.residual(), w.attn_norm);
  f.attention(l, f.normed(), f.block_out());
  f.norm(f.block_out(), f.block_out(), w.attn_post_norm);
  f.add_to_residual(f.block_out());
  f.norm(f.normed(), f.residual(), w.ffn_norm);
  f.ffn(l, f.normed(), f.block_out());
  f.norm(f.block_out(), f.block_out(), w.ffn_post_norm);
  f.add_to_residual(f.block_out());
}

}  // namespace

const ModelFamily& gemma3_family() {
  static const ModelFamily f{"gemma3", "gemma3", {"Gemma3ForCausalLM", "Gemma3ForConditionalGeneration"},
                             "sqrt(d) embedding scale, sandwich norms, q/k norm, GeGLU, 5:1 local/global with own "
                             "window and rope base, linear rope scaling, final logit softcap",
                             read, names(), layer};
  return f;
}

}  // namespace slimkv
