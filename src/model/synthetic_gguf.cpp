#include "model/synthetic_gguf.h"

#include <filesystem>

#include "core/check.h"
#include "model/synthetic_gguf_parts.h"
#include "model/synthetic_model.h"

namespace slimkv {

SyntheticTensors::SyntheticTensors(GgufWriter& writer, DType dtype, uint64_t seed)
    : w_(writer), dtype_(dtype), rng_(seed), dist_(0.0f, 0.02f) {}

void SyntheticTensors::matrix(const std::string& name, int64_t rows, int64_t cols, int64_t experts) {
  std::vector<float> f(static_cast<size_t>(rows * cols * std::max<int64_t>(experts, 1)));
  for (auto& x : f) x = dist_(rng_);
  const DType t = cols % dtype_block_elems(dtype_) == 0 ? dtype_ : DType::F32;
  const auto q = quantize_rows(t, f.data(), static_cast<int64_t>(f.size()));
  if (experts > 0) {
    w_.add_tensor(name, t, {cols, rows, experts}, q.data(), q.size());
  } else {
    w_.add_tensor(name, t, {cols, rows}, q.data(), q.size());
  }
}

void SyntheticTensors::ones(const std::string& name, int64_t count) {
  const std::vector<float> v(static_cast<size_t>(count), 1.0f);
  w_.add_tensor(name, DType::F32, {count}, v.data(), v.size() * 4);
}

void SyntheticTensors::values(const std::string& name, const std::vector<int64_t>& dims, float mean, float sd) {
  int64_t count = 1;
  for (const int64_t d : dims) count *= d;
  std::vector<float> v(static_cast<size_t>(count), mean);
  if (sd > 0.0f) {
    std::normal_distribution<float> dist(mean, sd);
    for (auto& x : v) x = dist(rng_);
  }
  w_.add_tensor(name, DType::F32, dims, v.data(), v.size() * 4);
}

void add_placeholder_vocab(GgufWriter& w, int32_t vocab_size) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    types.push_back(6);
  }
  SLIMKV_CHECK(vocab_size >= static_cast<int32_t>(tokens.size()), "vocabulary too small for byte tokens");
  while (static_cast<int32_t>(tokens.size()) < vocab_size) {
    tokens.push_back(fmt::format("\u2581t{}", tokens.size()));
    types.push_back(1);
  }
  std::vector<float> scores(tokens.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = -static_cast<float>(i);
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_f32s("tokenizer.ggml.scores", scores);
  w.add_i32s("tokenizer.ggml.token_type", types);
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  w.add_u32("tokenizer.ggml.unknown_token_id", 0);
}

void add_file_type(GgufWriter& w, DType dtype) {
  if (dtype == DType::F32 || dtype == DType::F16 || dtype == DType::Q4_0 || dtype == DType::Q8_0) {
    w.add_u32("general.file_type", dtype == DType::F32 ? 0 : dtype == DType::F16 ? 1 : dtype == DType::Q4_0 ? 2 : 7);
  }
}

namespace {

// A dense llama, or a qwen3moe (per-head q/k norms, an F32 router, expert stacks).
void write_llama_synthetic(const ModelConfig& c, GgufWriter& w, SyntheticTensors& t) {
  const bool moe = c.family == "qwen3moe";
  const std::string arch = moe ? "qwen3moe" : "llama";
  w.add_u32(arch + ".context_length", static_cast<uint32_t>(c.max_seq_len));
  w.add_u32(arch + ".embedding_length", static_cast<uint32_t>(c.dim));
  w.add_u32(arch + ".block_count", static_cast<uint32_t>(c.num_layers));
  w.add_u32(arch + ".feed_forward_length", static_cast<uint32_t>(c.hidden_dim));
  w.add_u32(arch + ".attention.head_count", static_cast<uint32_t>(c.num_heads));
  w.add_u32(arch + ".attention.head_count_kv", static_cast<uint32_t>(c.num_kv_heads));
  w.add_u32(arch + ".rope.dimension_count", static_cast<uint32_t>(c.head_dim));
  w.add_f32(arch + ".rope.freq_base", c.rope_theta);
  w.add_f32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
  w.add_u32(arch + ".vocab_size", static_cast<uint32_t>(c.vocab_size));
  if (moe) {
    w.add_u32(arch + ".expert_count", static_cast<uint32_t>(c.moe.num_experts));
    w.add_u32(arch + ".expert_used_count", static_cast<uint32_t>(c.moe.num_experts_used));
    w.add_u32(arch + ".expert_feed_forward_length", static_cast<uint32_t>(c.moe.expert_ffn_dim));
    w.add_u32(arch + ".attention.key_length", static_cast<uint32_t>(c.head_dim));
    w.add_u32(arch + ".attention.value_length", static_cast<uint32_t>(c.head_dim));
  }
  add_placeholder_vocab(w, c.vocab_size);
  const int64_t dim = c.dim, kv = static_cast<int64_t>(c.num_kv_heads) * c.head_dim, hidden = c.hidden_dim;
  t.matrix("token_embd.weight", c.vocab_size, dim);
  t.ones("output_norm.weight", dim);
  t.matrix("output.weight", c.vocab_size, dim);
  for (int32_t l = 0; l < c.num_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    t.ones(p + "attn_norm.weight", dim);
    t.matrix(p + "attn_q.weight", static_cast<int64_t>(c.num_heads) * c.head_dim, dim);
    t.matrix(p + "attn_k.weight", kv, dim);
    t.matrix(p + "attn_v.weight", kv, dim);
    t.matrix(p + "attn_output.weight", dim, static_cast<int64_t>(c.num_heads) * c.head_dim);
    t.ones(p + "ffn_norm.weight", dim);
    if (moe) {
      t.ones(p + "attn_q_norm.weight", c.head_dim);
      t.ones(p + "attn_k_norm.weight", c.head_dim);
      // routing scores of std ~0.1 x |x|: spread choices
      t.values(p + "ffn_gate_inp.weight", {dim, c.moe.num_experts}, 0.0f, 0.1f);
      const int64_t eff = c.moe.expert_ffn_dim;
      t.matrix(p + "ffn_gate_exps.weight", eff, dim, c.moe.num_experts);
      t.matrix(p + "ffn_up_exps.weight", eff, dim, c.moe.num_experts);
      t.matrix(p + "ffn_down_exps.weight", dim, eff, c.moe.num_experts);
      continue;
    }
    t.matrix(p + "ffn_gate.weight", hidden, dim);
    t.matrix(p + "ffn_up.weight", hidden, dim);
    t.matrix(p + "ffn_down.weight", dim, hidden);
  }
}

}  // namespace

int64_t write_synthetic_gguf(const std::string& shape, DType dtype, const std::string& path, uint64_t seed) {
  const ModelConfig c = synthetic_shape(shape);
  const bool dsv4 = c.dsv4.enabled();
  SLIMKV_CHECK(!c.mla.enabled() && (c.moe.num_experts == 0 || c.family == "qwen3moe" || dsv4),
               "write_synthetic_gguf: '{}' is not a dense llama, qwen3moe or deepseek4 shape", shape);
  GgufWriter w;
  w.add_string("general.architecture", dsv4 ? "deepseek4" : c.family == "qwen3moe" ? "qwen3moe" : "llama");
  w.add_string("general.name", "slimkv synthetic " + shape);
  add_file_type(w, dtype);
  SyntheticTensors tensors(w, dtype, seed);
  if (dsv4) {
    write_deepseek4_synthetic(c, w, tensors);
  } else {
    write_llama_synthetic(c, w, tensors);
  }
  w.write(path);
  return static_cast<int64_t>(std::filesystem::file_size(path));
}

}  // namespace slimkv
