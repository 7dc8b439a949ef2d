#include "model/synthetic_model.h"

#include <cmath>
#include <cstring>
#include <random>

#include "core/half.h"
#include "formats/gguf_writer.h"
#include "model/weight_packing.h"

namespace slimkv {

ModelConfig synthetic_shape(const std::string& name) {
  ModelConfig c;
  c.format = "synthetic " + name;
  c.rope_layout = RopeLayout::Interleaved;
  auto set = [&](int dim, int hidden, int layers, int heads, int kv_heads, int vocab, int ctx) {
    c.dim = dim; c.hidden_dim = hidden; c.num_layers = layers; c.num_heads = heads; c.num_kv_heads = kv_heads;
    c.vocab_size = vocab; c.max_seq_len = ctx; c.head_dim = dim / heads; c.rotary_dim = c.head_dim;
  };
  if (name == "llama-260k") set(64, 172, 5, 8, 4, 512, 512);
  else if (name == "llama-15m") set(288, 768, 6, 6, 6, 32000, 256);
  else if (name == "llama-110m") set(768, 2048, 12, 12, 12, 32000, 1024);
  else if (name == "llama-1b") set(2048, 8192, 16, 32, 8, 32000, 2048);
  else if (name == "deepseek-v2-lite") {
    // DeepSeek-V2-Lite's attention (16 heads, no q LoRA, kv_lora 512, nope 128, rope 64, v 128) in 2 layers with its
    // dense FFN width (10944) and a 32K vocabulary: the latent cache at its real size per layer.
    set(2048, 10944, 2, 16, 1, 32000, 4096);
    c.family = "deepseek2";
    c.mla = MlaConfig{0, 512, 128, 64, 128};
    c.head_dim = 512 + 64;
    c.head_dim_v = 512;
    c.rotary_dim = 64;
    c.attn_scale = 1.0f / std::sqrt(192.0f);
    c.finalize();
    for (auto& l : c.layers) l.mla = true;
  } else {
    fail("unknown synthetic shape '{}' (choose one of llama-260k, llama-15m, llama-110m, llama-1b, deepseek-v2-lite)",
         name);
  }
  c.finalize();
  c.validate();
  return c;
}

std::vector<std::string> synthetic_shape_names() {
  return {"llama-260k", "llama-15m", "llama-110m", "llama-1b", "deepseek-v2-lite"};
}

std::unique_ptr<Model> make_synthetic_model(const std::string& shape, DType dtype, uint64_t seed) {
  auto m = std::make_unique<Model>();
  m->config = synthetic_shape(shape);
  const ModelConfig& c = m->config;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  auto matrix = [&](int64_t rows, int64_t cols) {
    std::vector<float> f(static_cast<size_t>(rows * cols));
    for (auto& x : f) x = dist(rng);
    auto bytes = std::make_shared<std::vector<uint8_t>>();
    if (dtype == DType::F32) {
      bytes->resize(f.size() * 4);
      std::memcpy(bytes->data(), f.data(), bytes->size());
    } else if (dtype == DType::F16) {
      bytes->resize(f.size() * 2);
      auto* h = reinterpret_cast<uint16_t*>(bytes->data());
      for (size_t i = 0; i < f.size(); ++i) h[i] = fp32_to_fp16(f[i]);
    } else {
      *bytes = quantize_rows(dtype, f.data(), static_cast<int64_t>(f.size()));
    }
    m->keepalive.push_back(bytes);
    return make_weight(dtype, rows, cols, bytes->data(), bytes->size(), "synthetic");
  };
  auto ones = [&](int64_t n) { return m->own_f32(std::vector<float>(n, 1.0f)); };
  m->tok_embd = matrix(c.vocab_size, c.dim);
  m->output = m->tok_embd;
  m->final_norm = ones(c.dim);
  for (int32_t l = 0; l < c.num_layers; ++l) {
    LayerWeights lw;
    lw.attn_norm = ones(c.dim);
    if (c.layers[l].mla) {
      const MlaConfig& a = c.mla;
      lw.wq = matrix(static_cast<int64_t>(c.num_heads) * a.q_head_dim(), c.dim);
      lw.wkv_a = matrix(a.kv_lora_rank + a.rope_dim, c.dim);
      lw.kv_a_norm = ones(a.kv_lora_rank);
      for (int32_t h = 0; h < c.num_heads; ++h) {
        lw.k_b.push_back(matrix(a.kv_lora_rank, a.nope_dim));
        lw.v_b.push_back(matrix(a.v_head_dim, a.kv_lora_rank));
      }
      lw.wo = matrix(c.dim, static_cast<int64_t>(c.num_heads) * a.v_head_dim);
    } else {
      lw.wq = matrix(c.q_dim(), c.dim);
      lw.wk = matrix(c.kv_dim(), c.dim);
      lw.wv = matrix(c.kv_dim(), c.dim);
      lw.wo = matrix(c.dim, c.q_dim());
    }
    lw.ffn_norm = ones(c.dim);
    lw.w1 = matrix(c.hidden_dim, c.dim);
    lw.w2 = matrix(c.dim, c.hidden_dim);
    lw.w3 = matrix(c.hidden_dim, c.dim);
    m->layers.push_back(lw);
  }
  m->path = "synthetic:" + shape;
  pack_weights_for_kernels(*m);
  return m;
}

}  // namespace slimkv
