// GGUF (v1-v3, general.architecture = llama) -> Model. Tensor names follow llama.cpp (token_embd, blk.N.attn_q ...).
#include "formats/gguf_file.h"
#include "model/model.h"

namespace slimkv {
namespace {

struct GgufWeights {
  const GgufFile& g;
  Model& m;

  const GgufTensorInfo& tensor(const std::string& name) const {
    const GgufTensorInfo* t = g.find_tensor(name);
    SLIMKV_CHECK(t != nullptr, "{}: missing tensor '{}'", g.source(), name);
    return *t;
  }
  WeightView matrix(const std::string& name, int64_t rows, int64_t cols) const {
    const GgufTensorInfo& t = tensor(name);
    SLIMKV_CHECK(t.dims.size() == 2 && t.dims[0] == cols && t.dims[1] == rows,
                 "{}: tensor '{}' has shape {} but the hyper-parameters need [{}, {}]", g.source(), name,
                 fmt::join(t.dims, "x"), cols, rows);
    WeightView w = make_weight(t.dtype, rows, cols, t.data, t.size_bytes, name);
    if (t.dtype == DType::BF16) {  // no BF16 matmul kernel: convert once
      std::vector<float> f(static_cast<size_t>(rows * cols));
      for (int64_t r = 0; r < rows; ++r) dequantize_row(w, r, f.data() + r * cols);
      w = WeightView{DType::F32, rows, cols, m.own_f32(std::move(f))};
    }
    return w;
  }
  const float* vector(const std::string& name, int64_t n) const {
    const GgufTensorInfo& t = tensor(name);
    SLIMKV_CHECK(t.dims.size() == 1 && t.dims[0] == n, "{}: tensor '{}' should be a vector of {}", g.source(), name, n);
    if (t.dtype == DType::F32) return reinterpret_cast<const float*>(t.data);
    WeightView w = make_weight(t.dtype, 1, n, t.data, t.size_bytes, name);
    std::vector<float> f(n);
    dequantize_row(w, 0, f.data());
    return m.own_f32(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Model> load_gguf_model(const std::string& path) {
  auto g = std::make_shared<GgufFile>(path);
  auto m = std::make_unique<Model>();
  m->keepalive.push_back(g);
  std::string arch = g->get_string_opt("general.architecture").value_or("llama");
  SLIMKV_CHECK(arch == "llama", "{}: unsupported architecture '{}' (slimkv runs llama)", path, arch);
  ModelConfig& c = m->config;
  c.format = fmt::format("gguf v{}", g->version());
  auto geti = [&](const char* k) {
    int64_t v = g->get_int(k);
    SLIMKV_CHECK(v >= 0 && v <= (1ll << 30), "{}: metadata '{}' = {} is out of range", path, k, v);
    return static_cast<int32_t>(v);
  };
  c.dim = geti("llama.embedding_length");
  c.num_layers = geti("llama.block_count");
  c.hidden_dim = geti("llama.feed_forward_length");
  c.num_heads = geti("llama.attention.head_count");
  c.num_kv_heads = g->find("llama.attention.head_count_kv") ? geti("llama.attention.head_count_kv") : c.num_heads;
  c.max_seq_len = geti("llama.context_length");
  SLIMKV_CHECK(c.num_heads > 0 && c.dim % c.num_heads == 0, "{}: embedding {} not divisible by {} heads", path,
               c.dim, c.num_heads);
  c.head_dim = c.dim / c.num_heads;
  c.rotary_dim = g->find("llama.rope.dimension_count") ? geti("llama.rope.dimension_count") : c.head_dim;
  c.rope_theta = static_cast<float>(g->get_float_opt("llama.rope.freq_base").value_or(10000.0));
  c.rms_eps = static_cast<float>(g->get_float_opt("llama.attention.layer_norm_rms_epsilon").value_or(1e-5));
  c.rope_layout = RopeLayout::Interleaved;  // llama.cpp's converter stores Q/K in Meta's interleaved layout
  const GgufTensorInfo* emb = g->find_tensor("token_embd.weight");
  SLIMKV_CHECK(emb && emb->dims.size() == 2, "{}: missing tensor 'token_embd.weight'", path);
  c.vocab_size = static_cast<int32_t>(emb->dims[1]);
  c.validate();

  GgufWeights w{*g, *m};
  m->tok_embd = w.matrix("token_embd.weight", c.vocab_size, c.dim);
  m->output = g->find_tensor("output.weight") ? w.matrix("output.weight", c.vocab_size, c.dim) : m->tok_embd;
  m->final_norm = w.vector("output_norm.weight", c.dim);
  for (int32_t l = 0; l < c.num_layers; ++l) {
    auto n = [&](const char* s) { return fmt::format("blk.{}.{}.weight", l, s); };
    LayerWeights lw;
    lw.attn_norm = w.vector(n("attn_norm"), c.dim);
    lw.wq = w.matrix(n("attn_q"), c.q_dim(), c.dim);
    lw.wk = w.matrix(n("attn_k"), c.kv_dim(), c.dim);
    lw.wv = w.matrix(n("attn_v"), c.kv_dim(), c.dim);
    lw.wo = w.matrix(n("attn_output"), c.dim, c.q_dim());
    lw.ffn_norm = w.vector(n("ffn_norm"), c.dim);
    lw.w1 = w.matrix(n("ffn_gate"), c.hidden_dim, c.dim);
    lw.w2 = w.matrix(n("ffn_down"), c.dim, c.hidden_dim);
    lw.w3 = w.matrix(n("ffn_up"), c.hidden_dim, c.dim);
    m->layers.push_back(lw);
  }
  m->tokenizer = tokenizer_from_gguf(*g);
  m->chat_template = g->get_string_opt("tokenizer.chat_template").value_or("");
  SLIMKV_CHECK(m->tokenizer->vocab_size() == c.vocab_size, "{}: vocabulary has {} tokens but the model {}", path,
               m->tokenizer->vocab_size(), c.vocab_size);
  return m;
}

}  // namespace slimkv
