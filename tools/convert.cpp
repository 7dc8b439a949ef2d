// `slimkv convert`: writes a loaded llama-family model (a Hugging Face folder, a llama2.c checkpoint or a GGUF) as a
// GGUF `llama` file with slimkv's own writer — the hyper-parameters llama.cpp reads, every matrix in --dtype, norms
// in F32, the output tied to the embedding when it is — and a SentencePiece vocabulary from a llama2.c
// tokenizer.bin (-t) or the model's own; MTP heads (nextn) after the trunk as llama.cpp lays them out. This is how
// the trained test models (tools/train/) become GGUF.
#include <cstdio>

#include "formats/gguf_writer.h"
#include "model/model.h"
#include "tokenizer/spm_tokenizer.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct ConvertFlags {
  ModelFlags model;
  std::string out, dtype = "f16", name;
};

// A SentencePiece vocabulary as GGUF's tokenizer.ggml.* (pieces with U+2581 for a space; types: 2 unknown,
// 3 control, 6 byte, 1 normal).
void write_vocab(GgufWriter& w, const SpmVocab& v) {
  std::vector<std::string> pieces;
  std::vector<int32_t> types;
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    std::string p = v.pieces[i];
    int32_t type = 1;
    if (static_cast<int32_t>(i) == v.unk_id) p = "<unk>", type = 2;
    else if (static_cast<int32_t>(i) == v.bos_id) p = "<s>", type = 3;
    else if (static_cast<int32_t>(i) == v.eos_id) p = "</s>", type = 3;
    else if (p.size() == 6 && p.rfind("<0x", 0) == 0 && p.back() == '>') type = 6;
    else if (v.space_marker != "\xE2\x96\x81") {
      for (size_t at; (at = p.find(v.space_marker)) != std::string::npos;) p.replace(at, v.space_marker.size(), "\xE2\x96\x81");
    }
    pieces.push_back(std::move(p));
    types.push_back(v.types.empty() || type != 1 ? type : v.types[i]);
  }
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_strings("tokenizer.ggml.tokens", pieces);
  w.add_f32s("tokenizer.ggml.scores", v.scores);
  w.add_i32s("tokenizer.ggml.token_type", types);
  w.add_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos_id));
  w.add_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos_id));
  w.add_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(v.unk_id));
  w.add_bool("tokenizer.ggml.add_bos_token", v.add_bos);
}

// One matrix [rows, cols] in dtype (its rows dequantized to f32 first: any stored type converts).
void add_matrix(GgufWriter& w, const std::string& name, const WeightView& m, DType dtype) {
  std::vector<float> f(static_cast<size_t>(m.rows * m.cols));
  for (int64_t r = 0; r < m.rows; ++r) dequantize_row(m, r, f.data() + r * m.cols);
  const std::vector<uint8_t> bytes = quantize_rows(dtype, f.data(), static_cast<int64_t>(f.size()));
  w.add_tensor(name, dtype, {m.cols, m.rows}, bytes.data(), bytes.size());
}

void add_vector(GgufWriter& w, const std::string& name, const float* v, int64_t n) {
  w.add_tensor(name, DType::F32, {n}, v, static_cast<size_t>(n) * sizeof(float));
}

// One decoder layer's tensors under prefix b ("blk.N.").
void add_layer(GgufWriter& w, const std::string& b, const LayerWeights& lw, int64_t dim, DType dtype) {
  add_vector(w, b + "attn_norm.weight", lw.attn_norm, dim);
  add_matrix(w, b + "attn_q.weight", lw.wq, dtype);  // rows already in GGUF llama's order (adjacent RoPE pairs)
  add_matrix(w, b + "attn_k.weight", lw.wk, dtype);
  add_matrix(w, b + "attn_v.weight", lw.wv, dtype);
  add_matrix(w, b + "attn_output.weight", lw.wo, dtype);
  add_vector(w, b + "ffn_norm.weight", lw.ffn_norm, dim);
  add_matrix(w, b + "ffn_gate.weight", lw.w1, dtype);
  add_matrix(w, b + "ffn_up.weight", lw.w3, dtype);
  add_matrix(w, b + "ffn_down.weight", lw.w2, dtype);
}

int run_convert(const ConvertFlags& f) {
  std::unique_ptr<Model> m = load_model_from_flags(f.model);
  const ModelConfig& c = m->config;
  SLIMKV_CHECK(c.family == "llama", "convert writes llama-family models (this one is '{}')", c.family);
  SLIMKV_CHECK(c.moe.num_experts == 0 && c.uniform_kv(), "convert: experts and per-layer head shapes are not written");
  std::unique_ptr<Tokenizer> own_vocab;
  const Tokenizer* tok = m->tokenizer.get();
  if (!f.model.tokenizer.empty()) {
    own_vocab = load_llama2c_tokenizer(f.model.tokenizer, c.vocab_size);
    tok = own_vocab.get();
  }
  const auto* spm = dynamic_cast<const SpmTokenizer*>(tok);
  SLIMKV_CHECK(spm, "convert: a SentencePiece vocabulary is needed (-t tokenizer.bin, or a model that has one)");
  const DType dtype = parse_dtype(f.dtype);
  GgufWriter w;
  const std::string a = "llama.";
  w.add_string("general.architecture", "llama");
  w.add_string("general.name", f.name.empty() ? std::string("slimkv convert") : f.name);
  w.add_u32(a + "context_length", static_cast<uint32_t>(c.max_seq_len));
  w.add_u32(a + "embedding_length", static_cast<uint32_t>(c.dim));
  w.add_u32(a + "block_count", static_cast<uint32_t>(c.num_layers + c.num_mtp_layers));
  if (c.num_mtp_layers > 0) w.add_u32(a + "nextn_predict_layers", static_cast<uint32_t>(c.num_mtp_layers));
  w.add_u32(a + "feed_forward_length", static_cast<uint32_t>(c.layers[0].ffn_dim));
  w.add_u32(a + "attention.head_count", static_cast<uint32_t>(c.layers[0].num_heads));
  w.add_u32(a + "attention.head_count_kv", static_cast<uint32_t>(c.layers[0].num_kv_heads));
  w.add_u32(a + "attention.key_length", static_cast<uint32_t>(c.layers[0].head_dim_k));
  w.add_u32(a + "attention.value_length", static_cast<uint32_t>(c.layers[0].head_dim_v));
  w.add_u32(a + "rope.dimension_count", static_cast<uint32_t>(c.layers[0].rotary_dim));
  w.add_f32(a + "rope.freq_base", c.layers[0].rope.base);
  w.add_f32(a + "attention.layer_norm_rms_epsilon", c.rms_eps);
  w.add_u32(a + "vocab_size", static_cast<uint32_t>(c.vocab_size));
  write_vocab(w, spm->vocab());
  add_matrix(w, "token_embd.weight", m->tok_embd, dtype);
  add_vector(w, "output_norm.weight", m->final_norm, c.dim);
  if (m->output.data != m->tok_embd.data && !c.tie_word_embeddings) add_matrix(w, "output.weight", m->output, dtype);
  for (int32_t l = 0; l < c.num_layers; ++l) add_layer(w, "blk." + std::to_string(l) + ".", m->layers[l], c.dim, dtype);
  for (int32_t i = 0; i < c.num_mtp_layers; ++i) {  // llama.cpp's layout: after the trunk, counted in block_count
    const MtpHeadWeights& h = m->mtp[i];
    const std::string b = "blk." + std::to_string(c.num_layers + i) + ".";
    add_layer(w, b, h.layer, c.dim, dtype);
    add_matrix(w, b + "nextn.eh_proj.weight", h.eh_proj, dtype);
    add_vector(w, b + "nextn.enorm.weight", h.enorm, c.dim);
    add_vector(w, b + "nextn.hnorm.weight", h.hnorm, c.dim);
    add_vector(w, b + "nextn.shared_head_norm.weight", h.head_norm, c.dim);
    if (h.embed.data) add_matrix(w, b + "nextn.embed_tokens.weight", h.embed, dtype);
    if (h.head.data) add_matrix(w, b + "nextn.shared_head_head.weight", h.head, dtype);
  }
  w.write(f.out);
  std::printf("convert: %s -> %s (%s, %d layers, vocab %d)\n", m->path.c_str(), f.out.c_str(), f.dtype.c_str(),
              c.num_layers, c.vocab_size);
  return 0;
}

}  // namespace

void add_convert_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<ConvertFlags>();
  CLI::App* sub = app.add_subcommand("convert", "Write a llama-family model as a GGUF file (slimkv's own writer)");
  add_model_flags(sub, f->model);
  sub->add_option("-o,--output", f->out, "Output .gguf path")->required();
  sub->add_option("--dtype", f->dtype, "Matrix type: f32 | f16 | q8_0 | q4_0 (norms stay f32; default f16)");
  sub->add_option("--name", f->name, "general.name");
  out.push_back({sub, [f] { return run_convert(*f); }});
}

}  // namespace slimkv
