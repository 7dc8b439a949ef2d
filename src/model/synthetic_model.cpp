#include "model/synthetic_model.h"

#include <cmath>
#include <cstring>
#include <random>

#include "core/half.h"
#include "formats/gguf_writer.h"
#include "model/weight_packing.h"

namespace slimkv {

namespace {

// DeepSeek-V4's widths: what a shape of the family chooses (the rest is the family's own: hc 4, sqrt-softplus
// routing scaled 1.5, the compressed layers' RoPE base 160000 with YaRN x16 from 64K).
struct Dsv4Widths {
  int32_t dim, heads, head_dim, rotary_dim, q_lora_rank, o_groups, o_lora_rank, window_tokens;
  int32_t index_heads, index_head_dim, index_topk, experts, experts_used, expert_ffn_dim, vocab;
  float swiglu_limit;
};

void deepseek4_shape(ModelConfig& c, const Dsv4Widths& s, const std::vector<int32_t>& ratios, int32_t hash_layers) {
  const int32_t layers = static_cast<int32_t>(ratios.size());
  c.dim = s.dim; c.hidden_dim = 0; c.num_layers = layers; c.num_heads = s.heads; c.num_kv_heads = 1;
  c.vocab_size = s.vocab; c.max_seq_len = 1 << 20;
  c.family = "deepseek4";
  c.head_dim = c.head_dim_v = s.head_dim;
  c.rotary_dim = s.rotary_dim;
  Dsv4Config& d = c.dsv4;
  d.hc_mult = 4;
  d.q_lora_rank = s.q_lora_rank;
  d.o_groups = s.o_groups;
  d.o_lora_rank = s.o_lora_rank;
  d.index_heads = s.index_heads;
  d.index_head_dim = s.index_head_dim;
  d.index_topk = s.index_topk;
  d.compress_rope.base = 160000.0f;
  d.compress_rope.freq_scale = 1.0f / 16.0f;
  d.compress_rope.ext_factor = 1.0f;
  d.compress_rope.orig_ctx = 65536;
  d.compress_rope.attn_factor = 1.0f / (1.0f + 0.1f * std::log(16.0f));
  MoeConfig& m = c.moe;
  m.num_experts = s.experts;
  m.num_experts_used = s.experts_used;
  m.expert_ffn_dim = s.expert_ffn_dim;
  m.num_shared_experts = 1;
  m.shared_ffn_dim = s.expert_ffn_dim;
  m.weights_scale = 1.5f;
  m.gating = MoeGating::SqrtSoftplus;
  m.swiglu_limit = m.swiglu_limit_shared = s.swiglu_limit;
  m.num_hash_layers = hash_layers;
  c.finalize();
  RopeConfig plain;
  plain.base = c.rope_theta;
  for (int32_t l = 0; l < layers; ++l) {
    LayerConfig& lc = c.layers[l];
    lc.compress_ratio = ratios[l];
    lc.rope = ratios[l] == 0 ? plain : d.compress_rope;
    lc.sliding_window = s.window_tokens;
    lc.moe = true;
  }
}

}  // namespace

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
  else if (name == "llama3.2-1b" || name == "llama3.1-8b") {
    // Llama-3.2-1B / Llama-3.1-8B as released (GQA 8, the 128,256-token vocabulary, RoPE base 500,000), the head
    // untied: the realistic rows of the side-by-side benchmark (issue P).
    if (name == "llama3.2-1b") set(2048, 8192, 16, 32, 8, 128256, 131072);
    else set(4096, 14336, 32, 32, 8, 128256, 131072);
    c.rope_theta = 500000.0f;
  }
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
  } else if (name == "llama3-8b-4l") {
    // Llama-3-8B's layer (dim 4096, 32 heads / 8 KV heads of 128, SwiGLU 14336) in 4 layers: the dense-attention
    // baseline for the DeepSeek-V4 shape below (same width, same depth, the same active FFN width).
    set(4096, 14336, 4, 32, 8, 32000, 1 << 20);
    c.rope_theta = 500000.0f;
  } else if (name == "qwen3moe-a3b-4l") {
    // Qwen3-30B-A3B's layer (dim 2048, 32 heads / 4 KV heads of 128 with q/k norms, 128 experts of 768, 8 used,
    // renormalised softmax router) in 4 layers with a 32K vocabulary: the MoE input of the scale-out bench.
    set(2048, 6144, 4, 32, 4, 32000, 40960);
    c.family = "qwen3moe";
    c.head_dim = c.head_dim_v = c.rotary_dim = 128;
    c.rope_theta = 1000000.0f;
    c.rope_layout = RopeLayout::RotateHalf;
    c.moe.num_experts = 128;
    c.moe.num_experts_used = 8;
    c.moe.expert_ffn_dim = 768;
    c.moe.norm_topk_prob = true;
    c.finalize();
    for (auto& l : c.layers) l.moe = true;
  } else if (name == "deepseek-v4-flash-4l") {
    // DeepSeek-V4-Flash's attention at full width (dim 4096, 64 heads of 512 with 64 RoPE dims, q LoRA 1024, 8
    // output groups of LoRA 1024, window 128, indexer 64 heads x 128, top-512, hc 4) in 4 layers CSA, HCA, CSA, HCA;
    // MoE scaled down to 8 experts of 2048 (6 used + 1 shared: the real active width), a 32K vocabulary.
    deepseek4_shape(c, {4096, 64, 512, 64, 1024, 8, 1024, 128, 64, 128, 512, 8, 6, 2048, 32000, 10.0f},
                    {4, 128, 4, 128}, 0);
  } else if (name == "deepseek-v4-tiny") {
    // The same kinds of layer at test size: window-only with hash routing, CSA, HCA, CSA (dim 256, 8 heads of 128,
    // indexer 16 x 64, 4 experts of 128): what a test writes and runs in llama.cpp and slimkv in seconds. With fewer
    // indexer heads random weights give many entries a score of exactly 0 (every head's relu 0), and llama.cpp's
    // top-k breaks such ties in no fixed order.
    deepseek4_shape(c, {256, 8, 128, 32, 128, 2, 64, 16, 16, 64, 8, 4, 2, 128, 512, 1.5f}, {0, 4, 128, 4}, 1);
  } else {
    fail("unknown synthetic shape '{}' (choose one of llama-260k, llama-15m, llama-110m, llama-1b, llama3.2-1b, "
         "llama3.1-8b, deepseek-v2-lite, llama3-8b-4l, qwen3moe-a3b-4l, deepseek-v4-flash-4l, deepseek-v4-tiny)", name);
  }
  c.finalize();
  c.validate();
  return c;
}

std::vector<std::string> synthetic_shape_names() {
  return {"llama-260k", "llama-15m", "llama-110m", "llama-1b", "llama3.2-1b", "llama3.1-8b", "deepseek-v2-lite",
          "llama3-8b-4l", "qwen3moe-a3b-4l", "deepseek-v4-flash-4l", "deepseek-v4-tiny"};
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
  auto values = [&](int64_t n, float mean, float sd) {
    std::normal_distribution<float> d(mean, sd);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return m->own_f32(std::move(v));
  };
  if (c.dsv4.enabled()) {
    const int64_t hc = c.dsv4.hc_mult;
    m->hc_head_fn = matrix(hc, hc * c.dim);
    m->hc_head_base = values(hc, 0.0f, 0.5f);
    m->hc_head_scale = values(1, 0.5f, 0.0f);
  }
  for (int32_t l = 0; l < c.num_layers; ++l) {
    LayerWeights lw;
    lw.attn_norm = ones(c.dim);
    if (c.dsv4.enabled()) {  // DeepSeek-V4 attention, compressor, indexer, hyper-connections; MoE FFN
      const Dsv4Config& d = c.dsv4;
      const LayerConfig& lc = c.layers[l];
      const int64_t H = lc.num_heads, D = lc.head_dim_k, hc = d.hc_mult, mix = (2 + hc) * hc, r = lc.compress_ratio;
      const int64_t coff = r == 4 ? 2 : 1, iH = d.index_heads, iD = d.index_head_dim;
      lw.hc_attn_fn = matrix(mix, hc * c.dim);
      lw.hc_ffn_fn = matrix(mix, hc * c.dim);
      lw.hc_attn_base = values(mix, 0.0f, 0.5f);
      lw.hc_ffn_base = values(mix, 0.0f, 0.5f);
      lw.hc_attn_scale = values(3, 0.5f, 0.0f);
      lw.hc_ffn_scale = values(3, 0.5f, 0.0f);
      lw.attn_sinks = values(H, 0.0f, 1.0f);
      lw.wq_a = matrix(d.q_lora_rank, c.dim);
      lw.q_a_norm = ones(d.q_lora_rank);
      lw.wq_b = matrix(H * D, d.q_lora_rank);
      lw.wkv = matrix(D, c.dim);
      lw.kv_norm = ones(D);
      for (int64_t g = 0; g < d.o_groups; ++g) lw.wo_a.push_back(matrix(d.o_lora_rank, H * D / d.o_groups));
      lw.wo_b = matrix(c.dim, d.o_groups * d.o_lora_rank);
      if (r > 0) {
        lw.comp_wkv = matrix(coff * D, c.dim);
        lw.comp_wgate = matrix(coff * D, c.dim);
        lw.comp_ape = values(r * coff * D, 0.0f, 0.5f);
        lw.comp_norm = ones(D);
      }
      if (r == 4) {
        lw.idx_proj = matrix(iH, c.dim);
        lw.idx_q_b = matrix(iH * iD, d.q_lora_rank);
        lw.idx_comp_wkv = matrix(2 * iD, c.dim);
        lw.idx_comp_wgate = matrix(2 * iD, c.dim);
        lw.idx_comp_ape = values(r * 2 * iD, 0.0f, 0.5f);
        lw.idx_comp_norm = ones(iD);
      }
      lw.ffn_norm = ones(c.dim);
      const MoeConfig& mc = c.moe;
      lw.router = matrix(mc.num_experts, c.dim);
      for (int32_t e = 0; e < mc.num_experts; ++e) {
        lw.exp_gate.push_back(matrix(mc.expert_ffn_dim, c.dim));
        lw.exp_up.push_back(matrix(mc.expert_ffn_dim, c.dim));
        lw.exp_down.push_back(matrix(c.dim, mc.expert_ffn_dim));
      }
      lw.exp_probs_b = values(mc.num_experts, 0.0f, 0.1f);
      if (l < mc.num_hash_layers) {  // hash-routed: token t -> experts (t + k) mod experts, distinct per token
        auto table = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(c.vocab_size) * mc.num_experts_used * 4);
        auto* ids = reinterpret_cast<int32_t*>(table->data());
        for (int64_t i = 0; i < static_cast<int64_t>(c.vocab_size) * mc.num_experts_used; ++i) {
          ids[i] = static_cast<int32_t>((i / mc.num_experts_used + i % mc.num_experts_used) % mc.num_experts);
        }
        m->keepalive.push_back(table);
        lw.tid2eid = ids;
      }
      lw.shexp_gate = matrix(mc.shared_ffn_dim, c.dim);
      lw.shexp_up = matrix(mc.shared_ffn_dim, c.dim);
      lw.shexp_down = matrix(c.dim, mc.shared_ffn_dim);
      m->layers.push_back(lw);
      continue;
    }
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
