// Family `deepseek2`: DeepSeek-V2 / V2-Lite / V3 / R1 and Kimi-K2 (GGUF `deepseek2`, as llama.cpp's converter
// writes it). Multi-head latent attention, absorbed (model/blocks/mla_attention.h): q LoRA with its norm (or a plain q
// projection when q_lora_rank is 0: V2-Lite), the cache holds [latent | rope key] per token; RoPE NORM on the rope
// dims with YaRN, whose magnitude factor is cancelled in the rotation and applied to the softmax scale instead:
// scale = mscale^2 / sqrt(nope + rope), mscale = 1 + yarn_log_multiplier * ln(factor). FFN: leading dense layers,
// then DeepSeekMoE — softmax (V2) or sigmoid (V3) gating, the selection bias exp_probs_b, group-limited routing,
// expert_weights_norm and _scale, shared experts. HF checkpoints (DeepseekV2/V3ForCausalLM, also Kimi-K2's): the
// fused kv_b_proj is split into k_b / v_b at load; their RoPE dims are already in NORM order (HF de-interleaves at
// run time), so nothing is permuted.
#include <cmath>

#include "core/check.h"
#include "model/blocks/mla_attention.h"
#include "model/decoder_forward.h"
#include "model/family.h"

namespace slimkv {
namespace {

void read(const HParams& h, ModelConfig& c) {
  read_common_hparams(h, c);
  c.family = "deepseek2";
  c.rope_layout = RopeLayout::Interleaved;
  MlaConfig& a = c.mla;
  a.q_lora_rank = h.integer(Hp::QLoraRank, 0, 0, 1 << 16);
  a.kv_lora_rank = h.integer(Hp::KvLoraRank, std::nullopt, 1, 1 << 16);
  a.v_head_dim = h.integer(Hp::ValueLengthMla, std::nullopt, 1, 4096);
  if (h.is_gguf()) {
    a.rope_dim = c.rotary_dim;
    a.nope_dim = h.integer(Hp::KeyLengthMla, std::nullopt, 2, 4096) - a.rope_dim;
  } else {  // HF: qk_nope_head_dim, qk_rope_head_dim; the cache record is kv_lora + rope
    a.rope_dim = h.integer(Hp::QkRopeHeadDim, std::nullopt, 2, 1024);
    a.nope_dim = h.integer(Hp::QkNopeHeadDim, std::nullopt, 1, 4096);
    c.num_kv_heads = 1;
    c.head_dim = a.kv_lora_rank + a.rope_dim;
    c.head_dim_v = a.kv_lora_rank;
    c.rotary_dim = a.rope_dim;
    for (LayerConfig& lc : c.layers) {
      lc.num_kv_heads = 1;
      lc.head_dim_k = c.head_dim;
      lc.head_dim_v = c.head_dim_v;
      lc.rotary_dim = a.rope_dim;
    }
  }
  SLIMKV_CHECK(a.nope_dim > 0, "{}: '{}' must exceed the rope dims {}", h.source(), h.key_name(Hp::KeyLengthMla),
               a.rope_dim);
  SLIMKV_CHECK(c.head_dim == a.kv_lora_rank + a.rope_dim && c.head_dim_v == a.kv_lora_rank,
               "{}: key_length {} / value_length {} should be kv_lora_rank + rope {} / kv_lora_rank {}", h.source(),
               c.head_dim, c.head_dim_v, a.kv_lora_rank + a.rope_dim, a.kv_lora_rank);
  // YaRN: llama.cpp hands RoPE attn_factor = 1 / (1 + 0.1 ln(1/freq_scale)), cancelling its magnitude factor, and
  // scales the softmax by mscale^2 instead.
  RopeConfig rope = c.layers.front().rope;
  float mscale = 1.0f;
  if (rope.ext_factor != 0.0f) {
    const float lnf = std::log(1.0f / rope.freq_scale);
    rope.attn_factor = 1.0f / (1.0f + 0.1f * lnf);
    // GGUF yarn_log_multiplier = 0.1 * HF mscale_all_dim (llama.cpp's converter)
    const float log_mul = h.is_gguf() ? h.real(Hp::RopeScalingYarnLogMul, 0.0)
                                      : 0.1f * h.real(Hp::RopeScalingMscaleAllDim, 0.0);
    mscale = 1.0f + log_mul * lnf;
  }
  c.attn_scale = mscale * mscale / std::sqrt(static_cast<float>(a.nope_dim + a.rope_dim));
  // DeepSeekMoE
  const int32_t dense = h.integer(Hp::LeadingDenseBlockCount, 0, 0, c.num_layers);
  MoeConfig& m = c.moe;
  read_deepseek_moe(h, m);
  int32_t gating = h.integer(Hp::ExpertGatingFunc, 1, 1, 3);  // llama.cpp: 1 softmax, 2 sigmoid
  if (!h.is_gguf()) {
    const std::string f = h.string(Hp::ScoringFunc).value_or("softmax");
    SLIMKV_CHECK(f == "softmax" || f == "sigmoid", "{}: scoring_func '{}' is not supported", h.source(), f);
    gating = f == "sigmoid" ? 2 : 1;
  }
  SLIMKV_CHECK(gating <= 2, "{}: expert gating function {} is not supported (1 softmax, 2 sigmoid)", h.source(),
               gating);
  m.gating = gating == 2 ? MoeGating::Sigmoid : MoeGating::Softmax;
  m.num_groups = std::max(1, h.integer(Hp::ExpertGroupCount, 1, 0, 4096));
  m.groups_used = std::max(1, h.integer(Hp::ExpertGroupUsedCount, 1, 0, 4096));
  for (int32_t l = 0; l < c.num_layers; ++l) {
    LayerConfig& lc = c.layers[l];
    lc.mla = true;
    lc.rope = rope;
    lc.moe = l >= dense;
  }
}

std::vector<TensorName> names() {
  const std::string b = "blk.{l}.", m = "model.layers.{l}.", a = m + "self_attn.", f = m + "mlp.";
  return {
      {TensorRole::TokEmbd, "token_embd.weight", "model.embed_tokens.weight"},
      {TensorRole::OutputNorm, "output_norm.weight", "model.norm.weight"},
      {TensorRole::Output, "output.weight", "lm_head.weight", Need::Optional},
      {TensorRole::AttnNorm, b + "attn_norm.weight", m + "input_layernorm.weight"},
      {TensorRole::AttnQ, b + "attn_q.weight", a + "q_proj.weight"},
      {TensorRole::AttnQA, b + "attn_q_a.weight", a + "q_a_proj.weight"},
      {TensorRole::AttnQANorm, b + "attn_q_a_norm.weight", a + "q_a_layernorm.weight"},
      {TensorRole::AttnQB, b + "attn_q_b.weight", a + "q_b_proj.weight"},
      {TensorRole::AttnKvAMqa, b + "attn_kv_a_mqa.weight", a + "kv_a_proj_with_mqa.weight"},
      {TensorRole::AttnKvANorm, b + "attn_kv_a_norm.weight", a + "kv_a_layernorm.weight"},
      {TensorRole::AttnKB, b + "attn_k_b.weight", "", Need::Optional},
      {TensorRole::AttnVB, b + "attn_v_b.weight", "", Need::Optional},
      {TensorRole::AttnKvB, b + "attn_kv_b.weight", a + "kv_b_proj.weight"},
      {TensorRole::AttnOut, b + "attn_output.weight", a + "o_proj.weight"},
      {TensorRole::FfnNorm, b + "ffn_norm.weight", m + "post_attention_layernorm.weight"},
      {TensorRole::FfnGate, b + "ffn_gate.weight", f + "gate_proj.weight"},
      {TensorRole::FfnUp, b + "ffn_up.weight", f + "up_proj.weight"},
      {TensorRole::FfnDown, b + "ffn_down.weight", f + "down_proj.weight"},
      {TensorRole::MoeRouter, b + "ffn_gate_inp.weight", f + "gate.weight"},
      {TensorRole::MoeExpProbsB, b + "exp_probs_b.bias", f + "gate.e_score_correction_bias", Need::Optional},
      {TensorRole::MoeGateExps, b + "ffn_gate_exps.weight", f + "experts.{e}.gate_proj.weight"},
      {TensorRole::MoeUpExps, b + "ffn_up_exps.weight", f + "experts.{e}.up_proj.weight"},
      {TensorRole::MoeDownExps, b + "ffn_down_exps.weight", f + "experts.{e}.down_proj.weight"},
      {TensorRole::ShexpGate, b + "ffn_gate_shexp.weight", f + "shared_experts.gate_proj.weight"},
      {TensorRole::ShexpUp, b + "ffn_up_shexp.weight", f + "shared_experts.up_proj.weight"},
      {TensorRole::ShexpDown, b + "ffn_down_shexp.weight", f + "shared_experts.down_proj.weight"},
  };
}

// The pre-norm layer with latent attention: x += mla(norm(x)); x += ffn(norm(x)).
void layer(DecoderForward& f, int32_t l) {
  const LayerWeights& w = f.weights(l);
  f.norm(f.normed(), f.residual(), w.attn_norm);
  f.block<MlaAttentionBlock>().run(f, l, f.normed(), f.block_out());
  f.add_to_residual(f.block_out());
  f.norm(f.normed(), f.residual(), w.ffn_norm);
  f.ffn(l, f.normed(), f.block_out());
  f.add_to_residual(f.block_out());
}

}  // namespace

const ModelFamily& deepseek2_family() {
  static const ModelFamily f{"deepseek2", "deepseek2", {"DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"},
                             "MLA (q LoRA or plain q, latent + rope-key cache, absorbed attention, YaRN mscale), "
                             "leading dense layers, DeepSeekMoE (softmax/sigmoid gating, selection bias, groups, "
                             "norm and scale, shared experts)",
                             read, names(), layer, nullptr, MlaAttentionBlock::bind};
  return f;
}

}  // namespace slimkv
