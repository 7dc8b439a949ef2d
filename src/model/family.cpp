#include "model/family.h"

#include <cmath>

#include "core/check.h"

namespace slimkv {

// One line per family (each defined in families/<name>.cpp).
const ModelFamily& llama_family();
const ModelFamily& qwen2_family();
const ModelFamily& qwen3_family();
const ModelFamily& qwen3moe_family();
const ModelFamily& gemma3_family();
const ModelFamily& phi3_family();
const ModelFamily& deepseek2_family();
const ModelFamily& deepseek4_family();
const ModelFamily& gptoss_family();
const ModelFamily& qwen3next_family();

const std::vector<const ModelFamily*>& model_families() {
  static const std::vector<const ModelFamily*> all = {&llama_family(),    &qwen2_family(),  &qwen3_family(),
                                                      &qwen3moe_family(), &gemma3_family(), &phi3_family(),
                                                      &deepseek2_family(), &deepseek4_family(), &gptoss_family(),
                                                      &qwen3next_family()};
  return all;
}

namespace {

std::string supported(bool gguf) {
  std::string s;
  for (const ModelFamily* f : model_families()) {
    if (gguf) {
      s += (s.empty() ? "" : ", ") + f->gguf_arch;
    } else {
      for (const auto& a : f->hf_archs) s += (s.empty() ? "" : ", ") + a;
    }
  }
  return s;
}

}  // namespace

const ModelFamily& family_for_gguf(const std::string& arch, const std::string& source) {
  for (const ModelFamily* f : model_families()) {
    if (f->gguf_arch == arch) return *f;
  }
  fail("{}: unsupported architecture '{}' (slimkv runs: {})", source, arch, supported(true));
}

const ModelFamily& family_for_hf(const std::vector<std::string>& archs, const std::string& source) {
  for (const std::string& a : archs) {
    for (const ModelFamily* f : model_families()) {
      for (const auto& h : f->hf_archs) {
        if (h == a) return *f;
      }
    }
  }
  fail("{}: unsupported architecture {} (slimkv runs: {})", source,
       archs.empty() ? std::string("(none given)") : "'" + archs.front() + "'", supported(false));
}

const ModelFamily& family_by_name(const std::string& name) {
  for (const ModelFamily* f : model_families()) {
    if (f->name == name) return *f;
  }
  fail("unknown model family '{}'", name);
}

RopeConfig read_rope_scaling(const HParams& h, float base, int32_t rotary_dim) {
  RopeConfig r;
  r.base = base;
  const std::string type = h.string(Hp::RopeScalingType).value_or("none");
  if (type == "none" || type == "default") return r;
  const float factor = h.real(Hp::RopeScalingFactor);
  SLIMKV_CHECK(factor > 0 && factor < 1e4f, "{}: '{}' = {} is out of range", h.source(),
               h.key_name(Hp::RopeScalingFactor), factor);
  if (type == "linear") {
    r.freq_scale = 1.0f / factor;
  } else if (type == "yarn") {
    r.freq_scale = 1.0f / factor;
    r.ext_factor = 1.0f;
    r.orig_ctx = h.integer(Hp::RopeScalingOrigCtx, std::nullopt, 1, 1 << 24);
    r.beta_fast = h.real(Hp::RopeScalingBetaFast, 32.0);
    r.beta_slow = h.real(Hp::RopeScalingBetaSlow, 1.0);
    r.attn_factor = h.real(Hp::RopeScalingAttnFactor, 1.0);
  } else if (type == "llama3") {
    // As llama.cpp's converter computes `rope_freqs` (GGUF files carry the tensor instead of these keys).
    const double lo = h.real(Hp::RopeScalingLowFreqFactor, 1.0), hi = h.real(Hp::RopeScalingHighFreqFactor, 4.0);
    const double old_ctx = h.integer(Hp::RopeScalingOrigCtx, 8192, 1, 1 << 24);
    SLIMKV_CHECK(hi > lo, "{}: rope_scaling high_freq_factor must exceed low_freq_factor", h.source());
    const double lo_wavelen = old_ctx / lo, hi_wavelen = old_ctx / hi;
    for (int32_t i = 0; i < rotary_dim / 2; ++i) {
      const double freq = 1.0 / std::pow(static_cast<double>(base), 2.0 * i / rotary_dim);
      const double wavelen = 2 * M_PI / freq;
      double f;
      if (wavelen < hi_wavelen) f = 1.0;
      else if (wavelen > lo_wavelen) f = factor;
      else {
        const double smooth = (old_ctx / wavelen - lo) / (hi - lo);
        f = 1.0 / ((1 - smooth) / factor + smooth);
      }
      r.freq_factors.push_back(static_cast<float>(f));
    }
  } else {
    fail("{}: RoPE scaling type '{}' is not supported (supported: linear, yarn, llama3)", h.source(), type);
  }
  return r;
}

void read_common_hparams(const HParams& h, ModelConfig& c) {
  c.dim = h.integer(Hp::EmbeddingLength, std::nullopt, 1, 1 << 16);
  c.num_layers = h.integer(Hp::BlockCount, std::nullopt, 1, 1024);
  c.max_seq_len = h.integer(Hp::ContextLength, h.is_gguf() ? std::nullopt : std::optional<int64_t>(2048), 1, 1 << 24);
  c.rms_eps = h.real(Hp::RmsEps, 1e-5);
  c.vocab_size = h.integer(Hp::VocabSize, 0, 0, 1 << 22);
  c.tie_word_embeddings = h.boolean(Hp::TieWordEmbeddings).value_or(false);
  // an embedding model's pooling; a value slimkv does not pool by (rank) leaves None: /v1/embeddings then refuses
  if (h.is_gguf()) c.pooling = pooling_from_gguf(h.integer(Hp::PoolingType, 0, 0, 64)).value_or(Pooling::None);
  const int32_t L = c.num_layers;
  const std::vector<int32_t> heads = h.layer_ints(Hp::HeadCount, L);
  for (int32_t x : heads) {
    SLIMKV_CHECK(x > 0, "{}: '{}' must be positive", h.source(), h.key_name(Hp::HeadCount));
  }
  const std::vector<int32_t> kv = h.layer_ints(Hp::HeadCountKv, L, heads[0]);
  const std::vector<int32_t> ffn = h.layer_ints(Hp::FeedForwardLength, L, 0);
  if (!h.has(Hp::KeyLength)) {
    SLIMKV_CHECK(c.dim % heads[0] == 0, "{}: embedding {} is not divisible by {} heads and '{}' is missing",
                 h.source(), c.dim, heads[0], h.key_name(Hp::KeyLength));
  }
  c.head_dim = h.integer(Hp::KeyLength, c.dim / heads[0], 2, 1024);
  c.head_dim_v = h.integer(Hp::ValueLength, c.head_dim, 1, 1024);
  if (h.has(Hp::PartialRotaryFactor)) {
    c.rotary_dim = static_cast<int32_t>(std::lround(h.real(Hp::PartialRotaryFactor) * c.head_dim));
  } else {
    c.rotary_dim = h.integer(Hp::RopeDimensionCount, c.head_dim, 2, 1024);
  }
  c.rope_theta = h.real(Hp::RopeFreqBase, 10000.0);
  const RopeConfig rope = read_rope_scaling(h, c.rope_theta, c.rotary_dim);
  c.num_heads = heads[0];
  c.num_kv_heads = kv[0];
  c.hidden_dim = ffn[0];
  c.layers.assign(L, LayerConfig{});
  for (int32_t l = 0; l < L; ++l) {
    LayerConfig& lc = c.layers[l];
    lc.num_heads = heads[l];
    lc.num_kv_heads = kv[l];
    lc.head_dim_k = c.head_dim;
    lc.head_dim_v = c.head_dim_v;
    lc.rotary_dim = c.rotary_dim;
    lc.rope = rope;
    lc.ffn_dim = ffn[l];
  }
}

void read_routed_experts(const HParams& h, MoeConfig& m) {
  m.num_experts = h.integer(Hp::ExpertCount, std::nullopt, 1, 4096);
  m.num_experts_used = h.integer(Hp::ExpertUsedCount, std::nullopt, 1, m.num_experts);
  m.expert_ffn_dim = h.integer(Hp::ExpertFeedForwardLength, std::nullopt, 1, 1 << 18);
}

void read_deepseek_moe(const HParams& h, MoeConfig& m) {
  read_routed_experts(h, m);
  m.num_shared_experts = h.integer(Hp::ExpertSharedCount, 0, 0, 64);
  m.shared_ffn_dim = m.num_shared_experts * m.expert_ffn_dim;
  const float scale = h.real(Hp::ExpertWeightsScale, 1.0);
  m.weights_scale = scale == 0.0f ? 1.0f : scale;
  m.norm_topk_prob = h.boolean(Hp::ExpertWeightsNorm).value_or(false);
}

std::vector<TensorName> llama_style_tensor_names() {
  const std::string b = "blk.{l}.", m = "model.layers.{l}.";
  return {
      {TensorRole::TokEmbd, "token_embd.weight", "model.embed_tokens.weight"},
      {TensorRole::OutputNorm, "output_norm.weight", "model.norm.weight"},
      {TensorRole::Output, "output.weight", "lm_head.weight", Need::Optional},
      {TensorRole::AttnNorm, b + "attn_norm.weight", m + "input_layernorm.weight"},
      {TensorRole::AttnQ, b + "attn_q.weight", m + "self_attn.q_proj.weight"},
      {TensorRole::AttnK, b + "attn_k.weight", m + "self_attn.k_proj.weight"},
      {TensorRole::AttnV, b + "attn_v.weight", m + "self_attn.v_proj.weight"},
      {TensorRole::AttnOut, b + "attn_output.weight", m + "self_attn.o_proj.weight"},
      {TensorRole::FfnNorm, b + "ffn_norm.weight", m + "post_attention_layernorm.weight"},
      {TensorRole::FfnGate, b + "ffn_gate.weight", m + "mlp.gate_proj.weight"},
      {TensorRole::FfnUp, b + "ffn_up.weight", m + "mlp.up_proj.weight"},
      {TensorRole::FfnDown, b + "ffn_down.weight", m + "mlp.down_proj.weight"},
      {TensorRole::NextnEhProj, b + "nextn.eh_proj.weight", m + "eh_proj.weight", Need::Optional},
      {TensorRole::NextnEnorm, b + "nextn.enorm.weight", m + "enorm.weight", Need::Optional},
      {TensorRole::NextnHnorm, b + "nextn.hnorm.weight", m + "hnorm.weight", Need::Optional},
      {TensorRole::NextnHeadNorm, b + "nextn.shared_head_norm.weight", m + "shared_head.norm.weight", Need::Optional},
      {TensorRole::NextnHead, b + "nextn.shared_head_head.weight", m + "shared_head.head.weight", Need::Optional},
      {TensorRole::NextnEmbed, b + "nextn.embed_tokens.weight", m + "embed_tokens.weight", Need::Optional},
  };
}

void read_mtp_layers(const HParams& h, ModelConfig& c) {
  const int32_t mtp = h.integer(Hp::NextnPredictLayers, 0, 0, 16);
  if (mtp == 0) return;
  if (h.is_gguf()) {
    SLIMKV_CHECK(mtp < c.num_layers, "{}: '{}' = {} leaves no trunk layer of {}", h.source(),
                 h.key_name(Hp::NextnPredictLayers), mtp, c.num_layers);
    c.num_layers -= mtp;
    c.layers.resize(c.num_layers);
  }
  c.num_mtp_layers = mtp;
}

void set_tensor_name(std::vector<TensorName>& t, TensorName name) {
  for (auto it = t.begin(); it != t.end(); ++it) {
    if (it->role != name.role) continue;
    if (name.gguf.empty() && name.hf.empty()) t.erase(it);
    else *it = std::move(name);
    return;
  }
  if (!name.gguf.empty() || !name.hf.empty()) t.push_back(std::move(name));
}

}  // namespace slimkv
