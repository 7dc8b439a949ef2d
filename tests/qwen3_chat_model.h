// Test helper: a random-weight Qwen3-architecture model that carries Qwen3's real vocabulary (151,669 tokens, from
// ../shared/data/real-tokenizers/qwen3, written as GGUF by write_bpe_vocab) and its real chat template — what a
// client of a real Qwen3 sees, minus the weights: 2 layers, dim 64, 2 heads of 32 over 1 KV head, F16 (~20 MB,
// written at run time). The server test of tools, reasoning and structured output runs on it.
#pragma once
#include <fstream>
#include <nlohmann/json.hpp>

#include "random_gguf.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/gguf_vocab_writer.h"

namespace slimkv::test::qwen3chat {

inline std::string tokenizer_dir() { return data_dir() + "/real-tokenizers/qwen3"; }

inline std::string chat_template() {
  std::ifstream in(tokenizer_dir() + "/tokenizer_config.json");
  return nlohmann::json::parse(in)["chat_template"].get<std::string>();
}

// Writes the model to `path` (the vocabulary's size is the embedding's row count).
inline void write_model(const std::string& path) {
  const auto tok = load_hf_tokenizer(tokenizer_dir());
  const BpeConfig& vocab = dynamic_cast<const BpeTokenizer&>(*tok).config();
  const auto n_vocab = static_cast<int64_t>(vocab.pieces.size());
  constexpr int64_t kDim = 64, kHeads = 2, kKvHeads = 1, kHeadDim = 32, kFfn = 128, kLayers = 2;
  RandomGguf g("qwen3", 20261202, /*copy_vocabulary=*/false);
  write_bpe_vocab(g.writer(), vocab);
  g.writer().add_string("tokenizer.chat_template", chat_template());
  g.u32("context_length", 4096);
  g.u32("embedding_length", kDim);
  g.u32("block_count", kLayers);
  g.u32("feed_forward_length", kFfn);
  g.u32("attention.head_count", kHeads);
  g.u32("attention.head_count_kv", kKvHeads);
  g.u32("attention.key_length", kHeadDim);
  g.u32("attention.value_length", kHeadDim);
  g.f32("rope.freq_base", 1000000.0f);
  g.f32("attention.layer_norm_rms_epsilon", 1e-6f);
  const float in_std = 1.0f / std::sqrt(static_cast<float>(kDim));
  g.normal("token_embd.weight", {kDim, n_vocab}, 1.0f, 0.0f, DType::F16);
  g.normal("output_norm.weight", {kDim}, 0.1f, 1.0f);
  const int64_t q = kHeads * kHeadDim, kv = kKvHeads * kHeadDim;
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    g.normal(b + "attn_norm.weight", {kDim}, 0.1f, 1.0f);
    g.normal(b + "attn_q.weight", {kDim, q}, in_std);
    g.normal(b + "attn_k.weight", {kDim, kv}, in_std);
    g.normal(b + "attn_v.weight", {kDim, kv}, in_std);
    g.normal(b + "attn_q_norm.weight", {kHeadDim}, 0.1f, 1.0f);
    g.normal(b + "attn_k_norm.weight", {kHeadDim}, 0.1f, 1.0f);
    g.normal(b + "attn_output.weight", {q, kDim}, 1.0f / std::sqrt(static_cast<float>(q)));
    g.normal(b + "ffn_norm.weight", {kDim}, 0.1f, 1.0f);
    g.normal(b + "ffn_gate.weight", {kDim, kFfn}, in_std);
    g.normal(b + "ffn_up.weight", {kDim, kFfn}, in_std);
    g.normal(b + "ffn_down.weight", {kFfn, kDim}, 1.0f / std::sqrt(static_cast<float>(kFfn)));
  }
  g.write(path);
}

}  // namespace slimkv::test::qwen3chat
