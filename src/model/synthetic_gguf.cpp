#include "model/synthetic_gguf.h"

#include <filesystem>
#include <random>

#include "core/check.h"
#include "formats/gguf_writer.h"
#include "model/synthetic_model.h"

namespace slimkv {

int64_t write_synthetic_gguf(const std::string& shape, DType dtype, const std::string& path, uint64_t seed) {
  const ModelConfig c = synthetic_shape(shape);
  const bool moe = c.family == "qwen3moe";
  SLIMKV_CHECK(!c.mla.enabled() && !c.dsv4.enabled() && (c.moe.num_experts == 0 || moe),
               "write_synthetic_gguf: '{}' is not a dense llama or a qwen3moe shape", shape);
  const std::string arch = moe ? "qwen3moe" : "llama";
  GgufWriter w;
  w.add_string("general.architecture", arch);
  w.add_string("general.name", "slimkv synthetic " + shape);
  // llama.cpp's file type (LLAMA_FTYPE_*) for the uniform types; other types leave it out (informational only).
  if (dtype == DType::F32 || dtype == DType::F16 || dtype == DType::Q4_0 || dtype == DType::Q8_0) {
    w.add_u32("general.file_type", dtype == DType::F32 ? 0 : dtype == DType::F16 ? 1 : dtype == DType::Q4_0 ? 2 : 7);
  }
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
  // Placeholder SentencePiece vocabulary: <unk> <s> </s>, the 256 byte tokens, then fillers.
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    types.push_back(6);
  }
  SLIMKV_CHECK(c.vocab_size >= static_cast<int32_t>(tokens.size()), "vocabulary too small for byte tokens");
  while (static_cast<int32_t>(tokens.size()) < c.vocab_size) {
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

  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  // [experts x] rows x cols (an expert stack is one 3-D tensor: ne = {cols, rows, experts}).
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols, int64_t experts = 0) {
    std::vector<float> f(static_cast<size_t>(rows * cols * std::max<int64_t>(experts, 1)));
    for (auto& x : f) x = dist(rng);
    const DType t = cols % dtype_block_elems(dtype) == 0 ? dtype : DType::F32;
    const auto q = quantize_rows(t, f.data(), static_cast<int64_t>(f.size()));
    if (experts > 0) {
      w.add_tensor(name, t, {cols, rows, experts}, q.data(), q.size());
    } else {
      w.add_tensor(name, t, {cols, rows}, q.data(), q.size());
    }
  };
  auto ones = [&](const std::string& name, int64_t n) {
    const std::vector<float> v(static_cast<size_t>(n), 1.0f);
    w.add_tensor(name, DType::F32, {n}, v.data(), v.size() * 4);
  };
  const int64_t dim = c.dim, kv = static_cast<int64_t>(c.num_kv_heads) * c.head_dim, hidden = c.hidden_dim;
  matrix("token_embd.weight", c.vocab_size, dim);
  ones("output_norm.weight", dim);
  matrix("output.weight", c.vocab_size, dim);
  for (int32_t l = 0; l < c.num_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    ones(p + "attn_norm.weight", dim);
    matrix(p + "attn_q.weight", static_cast<int64_t>(c.num_heads) * c.head_dim, dim);
    matrix(p + "attn_k.weight", kv, dim);
    matrix(p + "attn_v.weight", kv, dim);
    matrix(p + "attn_output.weight", dim, static_cast<int64_t>(c.num_heads) * c.head_dim);
    ones(p + "ffn_norm.weight", dim);
    if (moe) {  // per-head q/k norms, the router (F32), and each expert stack
      ones(p + "attn_q_norm.weight", c.head_dim);
      ones(p + "attn_k_norm.weight", c.head_dim);
      std::vector<float> router(static_cast<size_t>(c.moe.num_experts * dim));
      for (auto& x : router) x = dist(rng) * 5.0f;  // routing scores of std ~0.1 x |x|: spread choices
      w.add_tensor(p + "ffn_gate_inp.weight", DType::F32, {dim, c.moe.num_experts}, router.data(), router.size() * 4);
      const int64_t eff = c.moe.expert_ffn_dim;
      matrix(p + "ffn_gate_exps.weight", eff, dim, c.moe.num_experts);
      matrix(p + "ffn_up_exps.weight", eff, dim, c.moe.num_experts);
      matrix(p + "ffn_down_exps.weight", dim, eff, c.moe.num_experts);
      continue;
    }
    matrix(p + "ffn_gate.weight", hidden, dim);
    matrix(p + "ffn_up.weight", hidden, dim);
    matrix(p + "ffn_down.weight", dim, hidden);
  }
  w.write(path);
  return static_cast<int64_t>(std::filesystem::file_size(path));
}

}  // namespace slimkv
