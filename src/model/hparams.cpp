#include "model/hparams.h"

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "formats/gguf_file.h"

namespace slimkv {
namespace {

const std::vector<HpName>& names() {
  static const std::vector<HpName> t = {
      {Hp::ContextLength, "context_length", {"max_position_embeddings"}},
      {Hp::EmbeddingLength, "embedding_length", {"hidden_size"}},
      {Hp::BlockCount, "block_count", {"num_hidden_layers"}},
      {Hp::FeedForwardLength, "feed_forward_length", {"intermediate_size"}},
      {Hp::HeadCount, "attention.head_count", {"num_attention_heads"}},
      {Hp::HeadCountKv, "attention.head_count_kv", {"num_key_value_heads"}},
      {Hp::KeyLength, "attention.key_length", {"head_dim"}},
      {Hp::ValueLength, "attention.value_length", {"head_dim"}},
      {Hp::RmsEps, "attention.layer_norm_rms_epsilon", {"rms_norm_eps"}},
      {Hp::RopeDimensionCount, "rope.dimension_count", {}},
      {Hp::RopeFreqBase, "rope.freq_base", {"rope_theta"}},
      {Hp::RopeFreqBaseSwa, "rope.freq_base_swa", {"rope_local_base_freq"}},
      {Hp::SlidingWindow, "attention.sliding_window", {"sliding_window"}},
      {Hp::SlidingWindowPattern, "attention.sliding_window_pattern", {"sliding_window_pattern"}},
      {Hp::VocabSize, "vocab_size", {"vocab_size"}},
      {Hp::RopeScalingType, "rope.scaling.type", {"rope_scaling.rope_type", "rope_scaling.type"}},
      {Hp::RopeScalingFactor, "rope.scaling.factor", {"rope_scaling.factor"}},
      {Hp::RopeScalingOrigCtx, "rope.scaling.original_context_length",
       {"rope_scaling.original_max_position_embeddings"}},
      {Hp::RopeScalingLowFreqFactor, "", {"rope_scaling.low_freq_factor"}},
      {Hp::RopeScalingHighFreqFactor, "", {"rope_scaling.high_freq_factor"}},
      {Hp::RopeScalingBetaFast, "rope.scaling.yarn_beta_fast", {"rope_scaling.beta_fast"}},
      {Hp::RopeScalingBetaSlow, "rope.scaling.yarn_beta_slow", {"rope_scaling.beta_slow"}},
      {Hp::RopeScalingAttnFactor, "rope.scaling.attn_factor", {"rope_scaling.attention_factor"}},
      {Hp::PartialRotaryFactor, "", {"partial_rotary_factor"}},
      {Hp::ExpertCount, "expert_count", {"num_experts", "num_local_experts", "n_routed_experts"}},
      {Hp::ExpertUsedCount, "expert_used_count", {"num_experts_per_tok"}},
      {Hp::ExpertFeedForwardLength, "expert_feed_forward_length", {"moe_intermediate_size"}},
      {Hp::ExpertSharedFeedForwardLength, "expert_shared_feed_forward_length", {"shared_expert_intermediate_size"}},
      {Hp::ExpertWeightsNorm, "expert_weights_norm", {"norm_topk_prob"}},
      {Hp::FinalLogitSoftcap, "final_logit_softcapping", {"final_logit_softcapping"}},
      {Hp::QueryPreAttnScalar, "", {"query_pre_attn_scalar"}},
      {Hp::TieWordEmbeddings, "", {"tie_word_embeddings"}},
      {Hp::QLoraRank, "attention.q_lora_rank", {"q_lora_rank"}},
      {Hp::KvLoraRank, "attention.kv_lora_rank", {"kv_lora_rank"}},
      {Hp::KeyLengthMla, "attention.key_length_mla", {}},
      {Hp::ValueLengthMla, "attention.value_length_mla", {"v_head_dim"}},
      {Hp::QkRopeHeadDim, "", {"qk_rope_head_dim"}},
      {Hp::QkNopeHeadDim, "", {"qk_nope_head_dim"}},
      {Hp::LeadingDenseBlockCount, "leading_dense_block_count", {"first_k_dense_replace"}},
      {Hp::ExpertSharedCount, "expert_shared_count", {"n_shared_experts"}},
      {Hp::ExpertWeightsScale, "expert_weights_scale", {"routed_scaling_factor"}},
      {Hp::ExpertGatingFunc, "expert_gating_func", {}},
      {Hp::ExpertGroupCount, "expert_group_count", {"n_group"}},
      {Hp::ExpertGroupUsedCount, "expert_group_used_count", {"topk_group"}},
      {Hp::RopeScalingYarnLogMul, "rope.scaling.yarn_log_multiplier", {}},
      {Hp::RopeScalingMscaleAllDim, "", {"rope_scaling.mscale_all_dim"}},
      {Hp::ScoringFunc, "", {"scoring_func"}},
      {Hp::SwigluClampExp, "swiglu_clamp_exp", {"swiglu_limit"}},
      {Hp::SwigluClampShexp, "swiglu_clamp_shexp", {}},
      {Hp::IndexerHeadCount, "attention.indexer.head_count", {"index_n_heads"}},
      {Hp::IndexerKeyLength, "attention.indexer.key_length", {"index_head_dim"}},
      {Hp::IndexerTopK, "attention.indexer.top_k", {"index_topk"}},
      {Hp::OutputGroupCount, "attention.output_group_count", {"o_groups"}},
      {Hp::OutputLoraRank, "attention.output_lora_rank", {"o_lora_rank"}},
      {Hp::CompressRatios, "attention.compress_ratios", {"compress_ratios"}},
      {Hp::CompressRopeFreqBase, "attention.compress_rope_freq_base", {"compress_rope_theta"}},
      {Hp::HcCount, "hyper_connection.count", {"hc_mult"}},
      {Hp::SsmConvKernel, "ssm.conv_kernel", {"linear_conv_kernel_dim"}},
      {Hp::SsmStateSize, "ssm.state_size", {"linear_key_head_dim"}},
      {Hp::SsmGroupCount, "ssm.group_count", {"linear_num_key_heads"}},
      {Hp::SsmTimeStepRank, "ssm.time_step_rank", {"linear_num_value_heads"}},
      {Hp::SsmInnerSize, "ssm.inner_size", {}},
      {Hp::FullAttentionInterval, "full_attention_interval", {"full_attention_interval"}},
      {Hp::RecurrentLayers, "attention.recurrent_layers", {}},
      {Hp::HcSinkhornIters, "hyper_connection.sinkhorn_iterations", {"hc_sinkhorn_iters"}},
      {Hp::HcEps, "hyper_connection.epsilon", {"hc_eps"}},
      {Hp::HashLayerCount, "hash_layer_count", {"num_hash_layers"}},
      {Hp::NextnPredictLayers, "nextn_predict_layers", {"num_nextn_predict_layers"}},
      {Hp::PoolingType, "pooling_type", {}},
  };
  return t;
}

const HpName& name_of(Hp k) {
  for (const HpName& n : names()) {
    if (n.key == k) return n;
  }
  fail("hparams: unknown key {}", static_cast<int>(k));
}

class GgufHParams : public HParams {
 public:
  GgufHParams(const GgufFile& g, std::string arch) : g_(g), arch_(std::move(arch)) {}
  std::string source() const override { return g_.source(); }
  bool is_gguf() const override { return true; }
  std::string key_name(Hp k) const override {
    const HpName& n = name_of(k);
    return *n.gguf ? arch_ + "." + n.gguf : "(no GGUF key)";
  }
  const GgufValue* find(Hp k) const { return *name_of(k).gguf ? g_.find(key_name(k)) : nullptr; }
  bool has(Hp k) const override { return find(k) != nullptr; }
  std::optional<double> number(Hp k) const override {
    const GgufValue* v = find(k);
    if (!v) return std::nullopt;
    SLIMKV_CHECK(!v->is_array() && (v->is_int() || v->is_float()), "{}: metadata '{}' must be a number", source(),
                 key_name(k));
    return v->is_int() ? static_cast<double>(v->i) : v->f;
  }
  std::optional<std::string> string(Hp k) const override {
    const GgufValue* v = find(k);
    if (!v) return std::nullopt;
    SLIMKV_CHECK(v->type == GgufType::STRING, "{}: metadata '{}' must be a string", source(), key_name(k));
    return v->s;
  }
  std::optional<bool> boolean(Hp k) const override {
    const GgufValue* v = find(k);
    if (!v) return std::nullopt;
    SLIMKV_CHECK(!v->is_array() && v->is_int(), "{}: metadata '{}' must be a bool", source(), key_name(k));
    return v->i != 0;
  }
  std::optional<std::vector<int64_t>> per_layer(Hp k, int32_t n) const override {
    const GgufValue* v = find(k);
    if (!v) return std::nullopt;
    if (!v->is_array()) return std::vector<int64_t>(n, static_cast<int64_t>(*number(k)));
    SLIMKV_CHECK(v->elem_type != GgufType::STRING && !v->ints.empty(), "{}: metadata '{}' must be integers",
                 source(), key_name(k));
    SLIMKV_CHECK(static_cast<int32_t>(v->ints.size()) == n, "{}: metadata '{}' has {} values for {} layers",
                 source(), key_name(k), v->ints.size(), n);
    return v->ints;
  }
  std::optional<std::vector<double>> per_layer_real(Hp k, int32_t n) const override {
    const GgufValue* v = find(k);
    if (!v) return std::nullopt;
    if (!v->is_array()) return std::vector<double>(n, *number(k));
    std::vector<double> out = v->floats;
    if (out.empty()) out.assign(v->ints.begin(), v->ints.end());
    SLIMKV_CHECK(v->elem_type != GgufType::STRING && static_cast<int32_t>(out.size()) == n,
                 "{}: metadata '{}' must hold {} numbers (one per layer)", source(), key_name(k), n);
    return out;
  }

 private:
  const GgufFile& g_;
  std::string arch_;
};

class HfHParams : public HParams {
 public:
  HfHParams(nlohmann::json j, std::string src) : j_(std::move(j)), src_(std::move(src)) {}
  std::string source() const override { return src_; }
  bool is_gguf() const override { return false; }
  std::string key_name(Hp k) const override {
    const HpName& n = name_of(k);
    for (const char* path : n.hf) {
      if (lookup(path)) return path;
    }
    return n.hf.empty() ? "(no config.json key)" : n.hf.front();
  }
  const nlohmann::json* find(Hp k) const {
    for (const char* path : name_of(k).hf) {
      if (const nlohmann::json* v = lookup(path)) return v;
    }
    return nullptr;
  }
  bool has(Hp k) const override { return find(k) != nullptr; }
  std::optional<double> number(Hp k) const override {
    const nlohmann::json* v = find(k);
    if (!v) return std::nullopt;
    SLIMKV_CHECK(v->is_number(), "{}: '{}' must be a number", src_, key_name(k));
    return v->get<double>();
  }
  std::optional<std::string> string(Hp k) const override {
    const nlohmann::json* v = find(k);
    if (!v) return std::nullopt;
    SLIMKV_CHECK(v->is_string(), "{}: '{}' must be a string", src_, key_name(k));
    return v->get<std::string>();
  }
  std::optional<bool> boolean(Hp k) const override {
    const nlohmann::json* v = find(k);
    if (!v) return std::nullopt;
    SLIMKV_CHECK(v->is_boolean(), "{}: '{}' must be true or false", src_, key_name(k));
    return v->get<bool>();
  }
  std::optional<std::vector<int64_t>> per_layer(Hp k, int32_t n) const override {
    const nlohmann::json* v = find(k);
    if (!v) return std::nullopt;
    if (!v->is_array()) return std::vector<int64_t>(n, static_cast<int64_t>(*number(k)));
    SLIMKV_CHECK(static_cast<int32_t>(v->size()) == n, "{}: '{}' has {} values for {} layers", src_, key_name(k),
                 v->size(), n);
    std::vector<int64_t> out;
    for (const auto& x : *v) {
      SLIMKV_CHECK(x.is_number_integer(), "{}: '{}' must be a list of integers", src_, key_name(k));
      out.push_back(x.get<int64_t>());
    }
    return out;
  }
  std::optional<std::vector<double>> per_layer_real(Hp k, int32_t n) const override {
    const nlohmann::json* v = find(k);
    if (!v) return std::nullopt;
    if (!v->is_array()) return std::vector<double>(n, *number(k));
    SLIMKV_CHECK(static_cast<int32_t>(v->size()) == n, "{}: '{}' has {} values for {} layers", src_, key_name(k),
                 v->size(), n);
    std::vector<double> out;
    for (const auto& x : *v) {
      SLIMKV_CHECK(x.is_number(), "{}: '{}' must be a list of numbers", src_, key_name(k));
      out.push_back(x.get<double>());
    }
    return out;
  }

 private:
  const nlohmann::json* lookup(const std::string& path) const {  // "a.b" walks nested objects; null = absent
    const nlohmann::json* cur = &j_;
    size_t start = 0;
    while (true) {
      const size_t dot = path.find('.', start);
      const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!cur->is_object()) return nullptr;
      auto it = cur->find(part);
      if (it == cur->end() || it->is_null()) return nullptr;
      cur = &*it;
      if (dot == std::string::npos) return cur;
      start = dot + 1;
    }
  }

  nlohmann::json j_;
  std::string src_;
};

}  // namespace

const std::vector<HpName>& hparam_names() { return names(); }

int32_t HParams::integer(Hp k, std::optional<int64_t> fallback, int64_t lo, int64_t hi) const {
  std::optional<double> v = number(k);
  if (!v) {
    SLIMKV_CHECK(fallback.has_value(), "{}: missing '{}'", source(), key_name(k));
    return static_cast<int32_t>(*fallback);
  }
  SLIMKV_CHECK(*v == static_cast<double>(static_cast<int64_t>(*v)) && *v >= static_cast<double>(lo) &&
                   *v <= static_cast<double>(hi),
               "{}: '{}' = {} must be an integer in {}..{}", source(), key_name(k), *v, lo, hi);
  return static_cast<int32_t>(*v);
}

float HParams::real(Hp k, std::optional<double> fallback) const {
  std::optional<double> v = number(k);
  if (!v) {
    SLIMKV_CHECK(fallback.has_value(), "{}: missing '{}'", source(), key_name(k));
    return static_cast<float>(*fallback);
  }
  return static_cast<float>(*v);
}

std::vector<int32_t> HParams::layer_ints(Hp k, int32_t n, std::optional<int64_t> fallback) const {
  auto v = per_layer(k, n);
  if (!v) {
    SLIMKV_CHECK(fallback.has_value(), "{}: missing '{}'", source(), key_name(k));
    return std::vector<int32_t>(n, static_cast<int32_t>(*fallback));
  }
  std::vector<int32_t> out;
  for (int64_t x : *v) {
    SLIMKV_CHECK(x >= 0 && x <= (1ll << 30), "{}: '{}' value {} is out of range", source(), key_name(k), x);
    out.push_back(static_cast<int32_t>(x));
  }
  return out;
}

std::unique_ptr<HParams> gguf_hparams(const GgufFile& g, const std::string& arch) {
  return std::make_unique<GgufHParams>(g, arch);
}

std::unique_ptr<HParams> hf_hparams(const std::string& json_text, const std::string& source) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  SLIMKV_CHECK(j.is_object(), "{}: invalid JSON (expected an object)", source);
  if (j.contains("text_config") && j["text_config"].is_object()) {  // multimodal wrappers (Gemma 3 4B+)
    nlohmann::json t = j["text_config"];
    for (const char* k : {"tie_word_embeddings", "vocab_size"}) {
      if (!t.contains(k) && j.contains(k)) t[k] = j[k];
    }
    j = std::move(t);
  }
  return std::make_unique<HfHParams>(std::move(j), source);
}

}  // namespace slimkv
