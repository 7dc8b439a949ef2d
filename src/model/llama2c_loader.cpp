// llama2.c legacy (version 0) checkpoints: 7 x int32 header (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
// vocab_size, seq_len; negative vocab = separate classifier), then f32 weights in a fixed order.
#include <filesystem>

#include "core/byte_reader.h"
#include "core/checked_math.h"
#include "core/mapped_file.h"
#include "model/model.h"

namespace slimkv {
namespace {

std::string find_tokenizer_beside(const std::string& model_path) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(model_path).parent_path();
  if (dir.empty()) dir = ".";
  if (fs::exists(dir / "tokenizer.bin")) return (dir / "tokenizer.bin").string();
  std::string found;
  for (auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.rfind("tok", 0) == 0 && e.path().extension() == ".bin") {
      SLIMKV_CHECK(found.empty(), "{}: several tokenizers beside the model ({} and {}); pass -t", model_path, found,
                   name);
      found = e.path().string();
    }
  }
  SLIMKV_CHECK(!found.empty(), "{}: no tokenizer.bin beside the model; pass -t TOKENIZER", model_path);
  return found;
}

}  // namespace

std::unique_ptr<Model> load_llama2c_model(const std::string& path, const std::string& tokenizer_path) {
  auto file = std::make_shared<MappedFile>(path);
  auto m = llama2c_model_from_bytes(file->bytes(), path);
  m->keepalive.push_back(file);
  std::string tok = tokenizer_path.empty() ? find_tokenizer_beside(path) : tokenizer_path;
  m->tokenizer = load_llama2c_tokenizer(tok, m->config.vocab_size);
  return m;
}

std::unique_ptr<Model> llama2c_model_from_bytes(std::span<const uint8_t> bytes, const std::string& path) {
  auto m = std::make_unique<Model>();
  ByteReader r(bytes, path);
  int32_t h[7];
  for (int i = 0; i < 7; ++i) h[i] = r.read<int32_t>("llama2.c header");
  ModelConfig& c = m->config;
  c.format = "llama2c";
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.num_layers = h[2];
  c.num_heads = h[3];
  c.num_kv_heads = h[4];
  bool shared_classifier = h[5] > 0;
  c.vocab_size = h[5] > 0 ? h[5] : (h[5] == INT32_MIN ? 0 : -h[5]);
  c.max_seq_len = h[6];
  SLIMKV_CHECK(c.num_heads > 0 && c.dim > 0 && c.dim % c.num_heads == 0,
               "{}: not a llama2.c checkpoint (header dim {} heads {})", path, c.dim, c.num_heads);
  c.head_dim = c.dim / c.num_heads;
  c.rotary_dim = c.head_dim;
  c.rope_layout = RopeLayout::Interleaved;
  c.rope_theta = 10000.0f;
  c.rms_eps = 1e-5f;
  try {
    c.finalize();
    c.validate();
  } catch (const Error& e) {
    fail("{}: not a valid llama2.c checkpoint ({})", path, e.what());
  }
  const uint64_t dim = c.dim, hid = c.hidden_dim, L = c.num_layers, kv = c.kv_dim(), vocab = c.vocab_size;
  const uint64_t seq = c.max_seq_len, hs = c.head_dim;
  uint64_t floats = 0;
  auto add = [&](std::initializer_list<uint64_t> dims) { floats = checked_add(floats, checked_product(dims, "weights"), "weights"); };
  add({vocab, dim});
  add({L, dim});
  add({L, dim, dim});
  add({L, kv, dim});
  add({L, kv, dim});
  add({L, dim, dim});
  add({L, dim});
  add({L, hid, dim});
  add({L, dim, hid});
  add({L, hid, dim});
  add({dim});
  add({seq, hs});  // freq_cis_real + freq_cis_imag: seq * hs/2 each
  if (!shared_classifier) add({vocab, dim});
  uint64_t expected = checked_add(28, checked_mul(floats, 4, "file size"), "file size");
  SLIMKV_CHECK(bytes.size() == expected,
               "{}: file has {} bytes but a llama2.c checkpoint with this header needs {} (truncated or not llama2.c?)",
               path, bytes.size(), expected);

  const float* p = reinterpret_cast<const float*>(bytes.data() + 28);
  auto take = [&](uint64_t n) {
    const float* q = p;
    p += n;
    return q;
  };
  auto mat = [](const float* base, int64_t rows, int64_t cols) { return WeightView{DType::F32, rows, cols, base}; };
  const float* emb = take(vocab * dim);
  const float* rms_att = take(L * dim);
  const float* wq = take(L * dim * dim);
  const float* wk = take(L * kv * dim);
  const float* wv = take(L * kv * dim);
  const float* wo = take(L * dim * dim);
  const float* rms_ffn = take(L * dim);
  const float* w1 = take(L * hid * dim);
  const float* w2 = take(L * dim * hid);
  const float* w3 = take(L * hid * dim);
  const float* rms_final = take(dim);
  take(seq * hs);  // freq_cis (recomputed at run time)
  const float* wcls = shared_classifier ? emb : take(vocab * dim);

  m->tok_embd = mat(emb, vocab, dim);
  m->output = mat(wcls, vocab, dim);
  m->final_norm = rms_final;
  for (uint64_t l = 0; l < L; ++l) {
    LayerWeights lw;
    lw.attn_norm = rms_att + l * dim;
    lw.wq = mat(wq + l * dim * dim, dim, dim);
    lw.wk = mat(wk + l * kv * dim, kv, dim);
    lw.wv = mat(wv + l * kv * dim, kv, dim);
    lw.wo = mat(wo + l * dim * dim, dim, dim);
    lw.ffn_norm = rms_ffn + l * dim;
    lw.w1 = mat(w1 + l * hid * dim, hid, dim);
    lw.w2 = mat(w2 + l * dim * hid, dim, hid);
    lw.w3 = mat(w3 + l * hid * dim, hid, dim);
    m->layers.push_back(lw);
  }
  return m;
}

}  // namespace slimkv
