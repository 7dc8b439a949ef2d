// Family `deepseek4`: DeepSeek-V4 (Flash / Pro), GGUF as llama.cpp's converter writes it (arch `deepseek4`).
// Per layer a compression ratio (0: sliding window only; 4: CSA — overlapping gated pooling of 4 tokens per entry,
// the lightning indexer picks the top-k entries per query; 128: HCA — every entry); one shared K = V head with RoPE
// on its last dims (plain RoPE on window-only layers, the compressed branch's base with YaRN elsewhere), learned
// sinks, grouped output LoRA; hyper-connections (hc_mult residual streams, Sinkhorn-normalised mixing); MoE on every
// layer: the first num_hash_layers route by a token id -> experts table, the rest by sqrt(softplus) scores with the
// selection bias; SwiGLU clamped. The blocks are model/blocks/compressed_attention and hyper_connections.
// Hugging Face checkpoints: DeepSeek's own tensor names (`layers.{l}.attn.wq_a.weight`, ...: what llama.cpp's
// converter reads, and the checkpoint holds), with the same layouts as the GGUF (the converter transposes nothing);
// F32 / F16 / BF16 tensors — the released FP8 (block-scaled e4m3) and FP4 expert weights are refused by name.
// The MTP layers are skipped (a draft-model feature).
#include <cmath>

#include "core/check.h"
#include "model/blocks/compressed_attention.h"
#include "model/blocks/hyper_connections.h"
#include "model/decoder_forward.h"
#include "model/family.h"

namespace slimkv {
namespace {

void read(const HParams& h, ModelConfig& c) {
  read_common_hparams(h, c);
  c.family = "deepseek4";
  c.rope_layout = RopeLayout::Interleaved;
  const int32_t L = c.num_layers;
  Dsv4Config& d = c.dsv4;
  d.hc_mult = h.integer(Hp::HcCount, std::nullopt, 1, 16);
  d.hc_sinkhorn_iters = h.integer(Hp::HcSinkhornIters, 20, 1, 1000);
  d.hc_eps = h.real(Hp::HcEps, 1e-6);
  d.q_lora_rank = h.integer(Hp::QLoraRank, std::nullopt, 1, 1 << 16);
  d.o_groups = h.integer(Hp::OutputGroupCount, std::nullopt, 1, 1024);
  d.o_lora_rank = h.integer(Hp::OutputLoraRank, std::nullopt, 1, 1 << 16);
  d.index_heads = h.integer(Hp::IndexerHeadCount, std::nullopt, 1, 1024);
  d.index_head_dim = h.integer(Hp::IndexerKeyLength, std::nullopt, 2, 4096);
  d.index_topk = h.integer(Hp::IndexerTopK, std::nullopt, 1, 1 << 20);
  const int32_t window = h.integer(Hp::SlidingWindow, std::nullopt, 1, 1 << 20);
  // config.json lists a ratio for the MTP layers too (as llama.cpp's converter expects): those are dropped; a GGUF
  // has one per layer.
  const int32_t mtp = h.is_gguf() ? 0 : h.integer(Hp::NextnPredictLayers, 0, 0, 16);
  std::vector<int32_t> ratios = h.layer_ints(Hp::CompressRatios, L + mtp);
  ratios.resize(L);
  if (!h.is_gguf()) {  // config.json names the rope part of the head `qk_rope_head_dim`
    c.rotary_dim = h.integer(Hp::QkRopeHeadDim, std::nullopt, 2, 1024);
    for (LayerConfig& lc : c.layers) lc.rotary_dim = c.rotary_dim;
  }
  SLIMKV_CHECK(c.num_kv_heads == 1 && c.head_dim == c.head_dim_v,
               "{}: DeepSeek-V4 has one shared K = V head ('{}' = 1, key_length = value_length)", h.source(),
               h.key_name(Hp::HeadCountKv));
  SLIMKV_CHECK(c.rotary_dim % 2 == 0 && c.rotary_dim <= c.head_dim && c.rotary_dim <= d.index_head_dim,
               "{}: rope dims {} must be even and fit the head ({}) and the indexer head ({})", h.source(),
               c.rotary_dim, c.head_dim, d.index_head_dim);
  SLIMKV_CHECK((d.index_head_dim & (d.index_head_dim - 1)) == 0, "{}: '{}' = {} must be a power of two (the "
               "indexer's Hadamard rotation)", h.source(), h.key_name(Hp::IndexerKeyLength), d.index_head_dim);
  SLIMKV_CHECK(c.num_heads % d.o_groups == 0, "{}: {} heads do not split into {} output groups", h.source(),
               c.num_heads, d.o_groups);
  // RoPE: plain base on window-only layers; compressed layers (their entries and indexer) use the compress base
  // with the file's YaRN, its magnitude factor cancelled (llama.cpp's dsv4_rope_attn_factor).
  RopeConfig plain;
  plain.base = c.rope_theta;
  RopeConfig comp = c.layers.front().rope;
  comp.base = h.real(Hp::CompressRopeFreqBase, c.rope_theta);
  if (comp.ext_factor != 0.0f) comp.attn_factor = 1.0f / (1.0f + 0.1f * std::log(1.0f / comp.freq_scale));
  d.compress_rope = comp;
  // MoE on every layer
  MoeConfig& m = c.moe;
  read_deepseek_moe(h, m);
  if (h.is_gguf()) {
    const int32_t gating = h.integer(Hp::ExpertGatingFunc, 4, 1, 4);
    SLIMKV_CHECK(gating == 4, "{}: DeepSeek-V4 expects sqrt-softplus expert scoring ('{}' = 4), got {}", h.source(),
                 h.key_name(Hp::ExpertGatingFunc), gating);
  } else {
    const std::string f = h.string(Hp::ScoringFunc).value_or("sqrtsoftplus");
    SLIMKV_CHECK(f == "sqrtsoftplus", "{}: DeepSeek-V4 expects scoring_func 'sqrtsoftplus', got '{}'", h.source(), f);
  }
  m.gating = MoeGating::SqrtSoftplus;
  m.num_hash_layers = h.integer(Hp::HashLayerCount, 0, 0, L);
  const std::vector<double> lim = h.per_layer_real(Hp::SwigluClampExp, L).value_or(std::vector<double>(L, 0.0));
  const std::vector<double> lim_sh = h.per_layer_real(Hp::SwigluClampShexp, L).value_or(lim);
  for (int32_t l = 1; l < L; ++l) {
    SLIMKV_CHECK(lim[l] == lim[0] && lim_sh[l] == lim_sh[0], "{}: per-layer SwiGLU limits that differ are not "
                 "supported", h.source());
  }
  m.swiglu_limit = static_cast<float>(lim[0]);
  m.swiglu_limit_shared = static_cast<float>(lim_sh[0]);
  for (int32_t l = 0; l < L; ++l) {
    LayerConfig& lc = c.layers[l];
    SLIMKV_CHECK(ratios[l] == 0 || ratios[l] == 4 || ratios[l] == 128,
                 "{}: layer {} has compress ratio {} (DeepSeek-V4 uses 0, 4 and 128)", h.source(), l, ratios[l]);
    lc.compress_ratio = ratios[l];
    lc.rope = ratios[l] == 0 ? plain : comp;
    lc.sliding_window = window;
    lc.moe = true;
  }
}

std::vector<TensorName> names() {
  const std::string b = "blk.{l}.", hf = "layers.{l}.";
  using R = TensorRole;
  return {
      {R::TokEmbd, "token_embd.weight", "embed.weight"},
      {R::OutputNorm, "output_norm.weight", "norm.weight"},
      {R::Output, "output.weight", "head.weight", Need::Optional},
      {R::HcHeadFn, "output_hc_fn.weight", "hc_head_fn"},
      {R::HcHeadBase, "output_hc_base.weight", "hc_head_base"},
      {R::HcHeadScale, "output_hc_scale.weight", "hc_head_scale"},
      {R::HcAttnFn, b + "hc_attn_fn.weight", hf + "hc_attn_fn"},
      {R::HcAttnBase, b + "hc_attn_base.weight", hf + "hc_attn_base"},
      {R::HcAttnScale, b + "hc_attn_scale.weight", hf + "hc_attn_scale"},
      {R::HcFfnFn, b + "hc_ffn_fn.weight", hf + "hc_ffn_fn"},
      {R::HcFfnBase, b + "hc_ffn_base.weight", hf + "hc_ffn_base"},
      {R::HcFfnScale, b + "hc_ffn_scale.weight", hf + "hc_ffn_scale"},
      {R::AttnNorm, b + "attn_norm.weight", hf + "attn_norm.weight"},
      {R::AttnSinks, b + "attn_sinks.weight", hf + "attn.attn_sink"},
      {R::AttnQA, b + "attn_q_a.weight", hf + "attn.wq_a.weight"},
      {R::AttnQANorm, b + "attn_q_a_norm.weight", hf + "attn.q_norm.weight"},
      {R::AttnQB, b + "attn_q_b.weight", hf + "attn.wq_b.weight"},
      {R::AttnKv, b + "attn_kv.weight", hf + "attn.wkv.weight"},
      {R::AttnKvNorm, b + "attn_kv_a_norm.weight", hf + "attn.kv_norm.weight"},
      {R::AttnOutA, b + "attn_output_a.weight", hf + "attn.wo_a.weight"},
      {R::AttnOutB, b + "attn_output_b.weight", hf + "attn.wo_b.weight"},
      {R::CompWkv, b + "attn_compressor_kv.weight", hf + "attn.compressor.wkv.weight"},
      {R::CompWgate, b + "attn_compressor_gate.weight", hf + "attn.compressor.wgate.weight"},
      {R::CompApe, b + "attn_compressor_ape.weight", hf + "attn.compressor.ape"},
      {R::CompNorm, b + "attn_compressor_norm.weight", hf + "attn.compressor.norm.weight"},
      {R::IdxProj, b + "indexer.proj.weight", hf + "attn.indexer.weights_proj.weight"},
      {R::IdxQB, b + "indexer.attn_q_b.weight", hf + "attn.indexer.wq_b.weight"},
      {R::IdxCompWkv, b + "indexer_compressor_kv.weight", hf + "attn.indexer.compressor.wkv.weight"},
      {R::IdxCompWgate, b + "indexer_compressor_gate.weight", hf + "attn.indexer.compressor.wgate.weight"},
      {R::IdxCompApe, b + "indexer_compressor_ape.weight", hf + "attn.indexer.compressor.ape"},
      {R::IdxCompNorm, b + "indexer_compressor_norm.weight", hf + "attn.indexer.compressor.norm.weight"},
      {R::FfnNorm, b + "ffn_norm.weight", hf + "ffn_norm.weight"},
      {R::MoeRouter, b + "ffn_gate_inp.weight", hf + "ffn.gate.weight"},
      {R::MoeTid2Eid, b + "ffn_gate_tid2eid.weight", hf + "ffn.gate.tid2eid", Need::Optional},
      {R::MoeExpProbsB, b + "exp_probs_b.bias", hf + "ffn.gate.bias", Need::Optional},
      {R::MoeGateExps, b + "ffn_gate_exps.weight", hf + "ffn.experts.{e}.w1.weight"},
      {R::MoeUpExps, b + "ffn_up_exps.weight", hf + "ffn.experts.{e}.w3.weight"},
      {R::MoeDownExps, b + "ffn_down_exps.weight", hf + "ffn.experts.{e}.w2.weight"},
      {R::ShexpGate, b + "ffn_gate_shexp.weight", hf + "ffn.shared_experts.w1.weight"},
      {R::ShexpUp, b + "ffn_up_shexp.weight", hf + "ffn.shared_experts.w3.weight"},
      {R::ShexpDown, b + "ffn_down_shexp.weight", hf + "ffn.shared_experts.w2.weight"},
  };
}

// Around each sub-block: the hyper-connection pre-mix gives its input, the post-mix folds its output back into the
// hc_mult streams; the last layer mixes the streams into the residual the classifier reads.
void layer(DecoderForward& f, int32_t l) {
  const LayerWeights& w = f.weights(l);
  HyperConnections& hc = f.block<HyperConnections>();
  if (l == 0) hc.begin(f);
  hc.pre(f, l, HcSite::Attn, f.normed());
  f.norm(f.normed(), f.normed(), w.attn_norm);
  f.block<CompressedAttention>().run(f, l, f.normed(), f.block_out());
  hc.post(f, f.block_out());
  hc.pre(f, l, HcSite::Ffn, f.normed());
  f.norm(f.normed(), f.normed(), w.ffn_norm);
  f.ffn(l, f.normed(), f.block_out());
  hc.post(f, f.block_out());
  if (l == f.model().config.num_layers - 1) hc.head(f);
}

std::vector<KvLayerSpec> layer_streams(const ModelConfig& c, int32_t l) { return compressed_layer_streams(c, l).specs; }

void bind_attention(LayerBinder& b, int32_t l) {
  HyperConnections::bind_layer(b, l);
  CompressedAttention::bind(b, l);
}

}  // namespace

const ModelFamily& deepseek4_family() {
  static const ModelFamily f{"deepseek4", "deepseek4", {"DeepseekV4ForCausalLM"},
                             "DeepSeek-V4: CSA (ratio 4, overlapping compressor, lightning indexer top-k) and HCA "
                             "(ratio 128) compressed streams + sliding window + sinks, shared K = V head with RoPE on "
                             "its last dims, grouped output LoRA, hyper-connections (Sinkhorn), hash-routed and "
                             "sqrt-softplus MoE with clamped SwiGLU",
                             read, names(), layer, layer_streams, bind_attention, HyperConnections::bind_head};
  return f;
}

}  // namespace slimkv
