// Family `gpt-oss`: OpenAI's open-weight MoE (GGUF `gpt-oss`, llama.cpp's LLM_ARCH_OPENAI_MOE). A pre-norm layer
// (the FFN's norm is the file's post_attention_norm) with: biases on q, k, v and o; NEOX RoPE with YaRN; a learned
// attention sink per head; every other layer a sliding window (layer l is windowed iff l % pattern < pattern - 1,
// pattern 2 unless the file says otherwise; windowed layers may have their own RoPE base); scale 1/sqrt(head size).
// Every FFN is a mixture: router logits + bias, top-k chosen on the logits, weights = softmax over the k chosen;
// experts with biases on gate, up and down and the clamped SwiGLU g·σ(1.702 g)·(u + 1) (g = min(gate, 7),
// u = clamp(up, ±7)); MXFP4 experts in released files. Hugging Face checkpoints (fused, interleaved gate_up_proj
// and MXFP4 `_blocks`/`_scales` tensors) are not read: GGUF only.
#include <cmath>

#include "model/decoder_forward.h"
#include "model/family.h"

namespace slimkv {
namespace {

constexpr float kSwigluAlpha = 1.702f;  // gpt-oss's constants (llama.cpp hard-codes them too)
constexpr float kSwigluLimit = 7.0f;

void read(const HParams& h, ModelConfig& c) {
  read_common_hparams(h, c);
  c.family = "gpt-oss";
  c.rope_layout = RopeLayout::RotateHalf;
  c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.rotary_dim));
  MoeConfig& m = c.moe;
  read_routed_experts(h, m);
  m.gating = MoeGating::SoftmaxWeight;
  m.norm_topk_prob = false;
  m.swiglu_alpha = kSwigluAlpha;
  m.swiglu_limit = kSwigluLimit;
  const int32_t window = h.integer(Hp::SlidingWindow, std::nullopt, 1, 1 << 24);
  const int32_t pattern = h.integer(Hp::SlidingWindowPattern, 2, 1, 1024);
  const float swa_base = h.real(Hp::RopeFreqBaseSwa, c.rope_theta);
  for (int32_t l = 0; l < c.num_layers; ++l) {
    LayerConfig& lc = c.layers[l];
    lc.moe = true;
    if (l % pattern < pattern - 1) {
      lc.sliding_window = window;
      lc.rope.base = swa_base;
    }
  }
}

std::vector<TensorName> names() {
  const std::string b = "blk.{l}.";
  auto gguf = [](TensorRole r, std::string name) { return TensorName{r, std::move(name), ""}; };
  return {
      gguf(TensorRole::TokEmbd, "token_embd.weight"),
      gguf(TensorRole::OutputNorm, "output_norm.weight"),
      gguf(TensorRole::Output, "output.weight"),
      gguf(TensorRole::AttnNorm, b + "attn_norm.weight"),
      gguf(TensorRole::AttnQ, b + "attn_q.weight"),
      gguf(TensorRole::AttnK, b + "attn_k.weight"),
      gguf(TensorRole::AttnV, b + "attn_v.weight"),
      gguf(TensorRole::AttnOut, b + "attn_output.weight"),
      gguf(TensorRole::AttnQBias, b + "attn_q.bias"),
      gguf(TensorRole::AttnKBias, b + "attn_k.bias"),
      gguf(TensorRole::AttnVBias, b + "attn_v.bias"),
      gguf(TensorRole::AttnOutBias, b + "attn_output.bias"),
      gguf(TensorRole::AttnSinks, b + "attn_sinks.weight"),
      gguf(TensorRole::FfnNorm, b + "post_attention_norm.weight"),
      gguf(TensorRole::MoeRouter, b + "ffn_gate_inp.weight"),
      gguf(TensorRole::MoeRouterBias, b + "ffn_gate_inp.bias"),
      gguf(TensorRole::MoeGateExps, b + "ffn_gate_exps.weight"),
      gguf(TensorRole::MoeUpExps, b + "ffn_up_exps.weight"),
      gguf(TensorRole::MoeDownExps, b + "ffn_down_exps.weight"),
      gguf(TensorRole::MoeGateExpsBias, b + "ffn_gate_exps.bias"),
      gguf(TensorRole::MoeUpExpsBias, b + "ffn_up_exps.bias"),
      gguf(TensorRole::MoeDownExpsBias, b + "ffn_down_exps.bias"),
  };
}

}  // namespace

const ModelFamily& gptoss_family() {
  static const ModelFamily f{"gpt-oss", "gpt-oss", {},
                             "q/k/v/o biases, attention sinks, alternating sliding-window / full layers, NEOX RoPE "
                             "with YaRN, MoE with router and expert biases, softmax over the chosen top-k, clamped "
                             "SwiGLU (1.702, 7), MXFP4 experts",
                             read, names(), pre_norm_layer};
  return f;
}

}  // namespace slimkv
