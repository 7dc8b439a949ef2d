// Hugging Face directory (config.json + model.safetensors + tokenizer.json, LlamaForCausalLM) -> Model.
// HF stores Q/K for rotate-half RoPE; F16 stays F16, BF16 is converted to F32 once.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "formats/safetensors_file.h"
#include "model/model.h"

namespace slimkv {

std::unique_ptr<Model> load_hf_model(const std::string& dir) {
  namespace fs = std::filesystem;
  std::string cfg_path = (fs::path(dir) / "config.json").string();
  std::string st_path = (fs::path(dir) / "model.safetensors").string();
  SLIMKV_CHECK(fs::exists(cfg_path), "{}: no config.json (not a Hugging Face model directory)", dir);
  SLIMKV_CHECK(fs::exists(st_path), "{}: no model.safetensors (sharded checkpoints are not supported)", dir);
  nlohmann::json j = nlohmann::json::parse(read_text_file(cfg_path), nullptr, false);
  SLIMKV_CHECK(j.is_object(), "{}: invalid JSON", cfg_path);
  if (j.contains("architectures") && j["architectures"].is_array()) {
    bool ok = false;
    for (auto& a : j["architectures"]) ok |= a.is_string() && a.get<std::string>() == "LlamaForCausalLM";
    SLIMKV_CHECK(ok, "{}: unsupported architecture {} (slimkv runs LlamaForCausalLM)", cfg_path,
                 j["architectures"].dump());
  }
  auto geti = [&](const char* k, std::optional<int64_t> def = std::nullopt) -> int32_t {
    if (!j.contains(k) || j[k].is_null()) {
      SLIMKV_CHECK(def.has_value(), "{}: missing '{}'", cfg_path, k);
      return static_cast<int32_t>(*def);
    }
    SLIMKV_CHECK(j[k].is_number_integer() && j[k].get<int64_t>() >= 0 && j[k].get<int64_t>() <= (1ll << 30),
                 "{}: '{}' must be a non-negative integer", cfg_path, k);
    return static_cast<int32_t>(j[k].get<int64_t>());
  };
  auto getf = [&](const char* k, double def) {
    if (!j.contains(k) || j[k].is_null()) return static_cast<float>(def);
    SLIMKV_CHECK(j[k].is_number(), "{}: '{}' must be a number", cfg_path, k);
    return j[k].get<float>();
  };
  auto m = std::make_unique<Model>();
  ModelConfig& c = m->config;
  c.format = "safetensors";
  c.dim = geti("hidden_size");
  c.hidden_dim = geti("intermediate_size");
  c.num_layers = geti("num_hidden_layers");
  c.num_heads = geti("num_attention_heads");
  c.num_kv_heads = geti("num_key_value_heads", c.num_heads);
  SLIMKV_CHECK(c.num_heads > 0, "{}: num_attention_heads must be positive", cfg_path);
  c.head_dim = geti("head_dim", c.dim / c.num_heads);
  c.rotary_dim = c.head_dim;
  c.vocab_size = geti("vocab_size");
  c.max_seq_len = geti("max_position_embeddings", 2048);
  c.rms_eps = getf("rms_norm_eps", 1e-6);
  c.rope_theta = getf("rope_theta", 10000.0);
  c.rope_layout = RopeLayout::RotateHalf;
  SLIMKV_CHECK(!j.contains("rope_scaling") || j["rope_scaling"].is_null(), "{}: rope_scaling is not supported",
               cfg_path);
  c.validate();
  bool tied = j.contains("tie_word_embeddings") && j["tie_word_embeddings"].is_boolean() &&
              j["tie_word_embeddings"].get<bool>();

  auto st = std::make_shared<SafetensorsFile>(st_path);
  m->keepalive.push_back(st);
  auto tensor = [&](const std::string& name) -> const SafetensorsTensor& {
    const SafetensorsTensor* t = st->find(name);
    SLIMKV_CHECK(t != nullptr, "{}: missing tensor '{}'", st_path, name);
    return *t;
  };
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    const SafetensorsTensor& t = tensor(name);
    SLIMKV_CHECK(t.shape.size() == 2 && t.shape[0] == rows && t.shape[1] == cols,
                 "{}: tensor '{}' has shape [{}] but the config needs [{}, {}]", st_path, name,
                 fmt::join(t.shape, ", "), rows, cols);
    WeightView w = make_weight(t.dtype, rows, cols, t.data, t.size_bytes, name);
    if (t.dtype == DType::BF16) {
      std::vector<float> f(static_cast<size_t>(rows * cols));
      for (int64_t r = 0; r < rows; ++r) dequantize_row(w, r, f.data() + r * cols);
      w = WeightView{DType::F32, rows, cols, m->own_f32(std::move(f))};
    }
    return w;
  };
  auto vec = [&](const std::string& name, int64_t n) -> const float* {
    const SafetensorsTensor& t = tensor(name);
    SLIMKV_CHECK(t.shape.size() == 1 && t.shape[0] == n, "{}: tensor '{}' should be a vector of {}", st_path, name, n);
    if (t.dtype == DType::F32) return reinterpret_cast<const float*>(t.data);
    std::vector<float> f(n);
    dequantize_row(make_weight(t.dtype, 1, n, t.data, t.size_bytes, name), 0, f.data());
    return m->own_f32(std::move(f));
  };
  const bool has_embed = st->find("model.embed_tokens.weight") != nullptr;
  const bool has_head = st->find("lm_head.weight") != nullptr;
  SLIMKV_CHECK(has_embed || has_head, "{}: neither model.embed_tokens.weight nor lm_head.weight is present", st_path);
  m->tok_embd = matrix(has_embed ? "model.embed_tokens.weight" : "lm_head.weight", c.vocab_size, c.dim);
  if (has_head && !tied) {
    m->output = matrix("lm_head.weight", c.vocab_size, c.dim);
  } else {
    SLIMKV_CHECK(tied || has_head, "{}: no lm_head.weight and tie_word_embeddings is false", st_path);
    m->output = m->tok_embd;
  }
  m->final_norm = vec("model.norm.weight", c.dim);
  for (int32_t l = 0; l < c.num_layers; ++l) {
    auto n = [&](const char* s) { return fmt::format("model.layers.{}.{}.weight", l, s); };
    LayerWeights lw;
    lw.attn_norm = vec(n("input_layernorm"), c.dim);
    lw.wq = matrix(n("self_attn.q_proj"), c.q_dim(), c.dim);
    lw.wk = matrix(n("self_attn.k_proj"), c.kv_dim(), c.dim);
    lw.wv = matrix(n("self_attn.v_proj"), c.kv_dim(), c.dim);
    lw.wo = matrix(n("self_attn.o_proj"), c.dim, c.q_dim());
    lw.ffn_norm = vec(n("post_attention_layernorm"), c.dim);
    lw.w1 = matrix(n("mlp.gate_proj"), c.hidden_dim, c.dim);
    lw.w2 = matrix(n("mlp.down_proj"), c.dim, c.hidden_dim);
    lw.w3 = matrix(n("mlp.up_proj"), c.hidden_dim, c.dim);
    m->layers.push_back(lw);
  }
  std::string tok_path = (fs::path(dir) / "tokenizer.json").string();
  SLIMKV_CHECK(fs::exists(tok_path), "{}: no tokenizer.json", dir);
  m->tokenizer = load_hf_tokenizer(tok_path);
  return m;
}

}  // namespace slimkv
