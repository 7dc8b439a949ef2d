// Test helper: writes a GGUF model of a supported family as a Hugging Face checkpoint — config.json (the family's
// hyper-parameter keys under their HF names), model.safetensors or N shards with model.safetensors.index.json, and
// a tokenizer.json of the GGUF vocabulary — undoing the family's HF fixes (q/k row permutation, +1 norms) and
// splitting 3-D expert tensors, so loading it back must give the same model. F32 tensors only; `edit` may then
// rewrite the tensor map (e.g. into DeepSeek's FP8 / FP4 release storage) before it is written.
#pragma once
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "formats/gguf_file.h"
#include "model/family.h"
#include "model/model.h"

namespace slimkv::test {

struct StTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;  // 4-byte elements: floats, or (dtype "I32") int32 bit patterns
  std::string dtype = "F32";
  std::vector<uint8_t> raw;  // when not empty: the stored bytes instead of data (1- and 2-byte dtypes)
  uint64_t bytes() const { return raw.empty() ? data.size() * sizeof(float) : raw.size(); }
  const char* ptr() const { return raw.empty() ? reinterpret_cast<const char*>(data.data()) : reinterpret_cast<const char*>(raw.data()); }
};
using StTensors = std::map<std::string, StTensor>;

inline void write_safetensors(const std::string& path, const std::map<std::string, StTensor>& tensors) {
  nlohmann::json h = {{"__metadata__", {{"format", "pt"}}}};
  uint64_t off = 0;
  for (const auto& [name, t] : tensors) {
    const uint64_t bytes = t.bytes();
    h[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + bytes}}};
    off += bytes;
  }
  std::string header = h.dump();
  while (header.size() % 8) header += ' ';
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header;
  for (const auto& [name, t] : tensors) {
    out.write(t.ptr(), static_cast<std::streamsize>(t.bytes()));
  }
}

inline std::string expand_name(std::string s, int64_t l, int64_t e) {
  for (auto [key, v] : {std::pair{std::string("{l}"), l}, std::pair{std::string("{e}"), e}}) {
    for (size_t p; (p = s.find(key)) != std::string::npos;) s.replace(p, key.size(), std::to_string(v));
  }
  return s;
}

// shards: 1 = model.safetensors; N > 1 = model-0000i-of-0000N.safetensors + index.
inline void export_hf(const std::string& gguf_path, const Model& m, const std::string& dir, int shards = 1,
                      const std::function<void(StTensors&)>& edit = {}) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  GgufFile g(gguf_path);
  const ModelConfig& c = m.config;
  const ModelFamily& fam = family_by_name(c.family);
  const std::string arch = g.get_string("general.architecture");
  // config.json: every key the GGUF has, under its HF name.
  nlohmann::json cfg = {{"architectures", {fam.hf_archs.front()}}, {"model_type", c.family}};
  for (const HpName& n : hparam_names()) {
    if (!*n.gguf || n.hf.empty()) continue;
    const GgufValue* v = g.find(arch + "." + n.gguf);
    if (!v) continue;
    // Per-layer arrays (compress_ratios, swiglu_limit) stay lists in config.json.
    const nlohmann::json list = v->ints.empty() ? nlohmann::json(v->floats) : nlohmann::json(v->ints);
    nlohmann::json value = v->is_array()                ? list
                           : v->type == GgufType::STRING ? nlohmann::json(v->s)
                           : v->type == GgufType::BOOL  ? nlohmann::json(v->i != 0)
                           : v->is_int()                ? nlohmann::json(v->i)
                                                        : nlohmann::json(v->f);
    std::string path = n.hf.front();
    nlohmann::json* at = &cfg;
    for (size_t dot; (dot = path.find('.')) != std::string::npos; path = path.substr(dot + 1)) at = &(*at)[path.substr(0, dot)];
    (*at)[path] = value;
  }
  cfg["vocab_size"] = c.vocab_size;
  if (c.mla.enabled()) {  // DeepSeek's HF names for what GGUF spells differently
    cfg["qk_nope_head_dim"] = c.mla.nope_dim;
    cfg["qk_rope_head_dim"] = c.mla.rope_dim;
    cfg["scoring_func"] = c.moe.gating == MoeGating::Sigmoid ? "sigmoid" : "softmax";
    if (const GgufValue* v = g.find(arch + ".rope.scaling.yarn_log_multiplier")) {
      cfg["rope_scaling"]["mscale_all_dim"] = v->f / 0.1;
    }
  }
  if (c.family == "deepseek4") {  // the HF spellings of what the GGUF keeps as an enum and the rope dim count
    cfg["scoring_func"] = "sqrtsoftplus";
    cfg["qk_rope_head_dim"] = c.rotary_dim;
    cfg["num_nextn_predict_layers"] = 1;  // as released: compress_ratios has an entry for the MTP layer too
    cfg["compress_ratios"].push_back(0);
  }
  cfg["tie_word_embeddings"] = g.find_tensor("output.weight") == nullptr;
  std::ofstream(dir + "/config.json") << cfg.dump(2);
  // Tensors.
  std::map<std::string, StTensor> tensors;
  auto f32 = [&](const GgufTensorInfo& t) {
    EXPECT_EQ(t.dtype, DType::F32) << t.name;
    const float* p = reinterpret_cast<const float*>(t.data);
    return std::vector<float>(p, p + t.num_elements());
  };
  for (const TensorName& tn : fam.tensors) {
    if (tn.hf.empty() || tn.gguf.empty()) continue;
    const bool per_layer = tn.gguf.find("{l}") != std::string::npos;
    for (int64_t l = 0; l < (per_layer ? c.num_layers : 1); ++l) {
      const GgufTensorInfo* t = g.find_tensor(expand_name(tn.gguf, l, 0));
      if (!t) continue;
      std::vector<int64_t> shape(t->dims.rbegin(), t->dims.rend());
      if (t->dtype == DType::I32) {  // an integer table (DeepSeek-V4's tid2eid): copied as is
        std::vector<float> bits(t->num_elements());
        std::memcpy(bits.data(), t->data, bits.size() * 4);
        tensors[expand_name(tn.hf, l, 0)] = {shape, std::move(bits), "I32"};
        continue;
      }
      std::vector<float> data = f32(*t);
      if (tn.hf_fix == HfFix::AddOne) {
        for (float& x : data) x -= 1.0f;
      } else if (tn.hf_fix == HfFix::PermuteHeads) {  // GGUF row h*hd + 2i + j -> HF row h*hd + j*half + i
        const bool q = tn.role == TensorRole::AttnQ || tn.role == TensorRole::AttnQBias;
        const int64_t rows = shape[0], cols = shape.size() > 1 ? shape[1] : 1;
        const int64_t heads = q ? c.layers[l].num_heads : c.layers[l].num_kv_heads, hd = rows / heads, half = hd / 2;
        std::vector<float> out(data.size());
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t h = r / hd, i = (r % hd) / 2, j = r % 2, dst = h * hd + j * half + i;
          std::copy(data.begin() + r * cols, data.begin() + (r + 1) * cols, out.begin() + dst * cols);
        }
        data.swap(out);
      }
      if (tn.hf.find("{e}") != std::string::npos) {  // 3-D [E, rows, cols] -> one tensor per expert
        const int64_t E = shape[0], per = static_cast<int64_t>(data.size()) / E;
        for (int64_t e = 0; e < E; ++e) {
          tensors[expand_name(tn.hf, l, e)] = {{shape[1], shape[2]},
                                               std::vector<float>(data.begin() + e * per, data.begin() + (e + 1) * per)};
        }
      } else {
        tensors[expand_name(tn.hf, l, 0)] = {shape, std::move(data)};
      }
    }
  }
  // MLA: HF keeps k_b and v_b fused as kv_b_proj, per head [nope rows: k_b[h] transposed | v rows: v_b[h]].
  for (int64_t l = 0; c.mla.enabled() && l < c.num_layers; ++l) {
    const GgufTensorInfo* kb = g.find_tensor(expand_name("blk.{l}.attn_k_b.weight", l, 0));
    const GgufTensorInfo* vb = g.find_tensor(expand_name("blk.{l}.attn_v_b.weight", l, 0));
    if (!kb || !vb) continue;
    const int64_t H = c.layers[l].num_heads, N = c.mla.nope_dim, L = c.mla.kv_lora_rank, V = c.mla.v_head_dim;
    const std::vector<float> k = f32(*kb), v = f32(*vb);  // [H, L, N], [H, V, L]
    std::vector<float> kv(static_cast<size_t>(H * (N + V) * L));
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t r = 0; r < L; ++r) kv[((h * (N + V)) + n) * L + r] = k[(h * L + r) * N + n];
      }
      std::copy(v.begin() + h * V * L, v.begin() + (h + 1) * V * L, kv.begin() + (h * (N + V) + N) * L);
    }
    tensors[expand_name("model.layers.{l}.self_attn.kv_b_proj.weight", l, 0)] = {{H * (N + V), L}, std::move(kv)};
  }
  if (edit) edit(tensors);
  if (shards <= 1) {
    write_safetensors(dir + "/model.safetensors", tensors);
  } else {
    std::vector<std::map<std::string, StTensor>> parts(shards);
    nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
    int i = 0;
    for (auto& [name, t] : tensors) {
      const int s = i++ % shards;
      const std::string file = fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards);
      index["weight_map"][name] = file;
      parts[s][name] = std::move(t);
    }
    for (int s = 0; s < shards; ++s) {
      write_safetensors(dir + fmt::format("/model-{:05d}-of-{:05d}.safetensors", s + 1, shards), parts[s]);
    }
    std::ofstream(dir + "/model.safetensors.index.json") << index.dump(2);
  }
  // tokenizer.json: the GGUF vocabulary as a BPE model without merges (enough to load; ids are what tests use).
  nlohmann::json vocab = nlohmann::json::object();
  const GgufValue* toks = g.find("tokenizer.ggml.tokens");
  for (size_t i = 0; toks && i < toks->strings.size(); ++i) {
    std::string piece = toks->strings[i];
    while (vocab.contains(piece)) piece += "#";
    vocab[piece] = i;
  }
  nlohmann::json tok = {{"version", "1.0"}, {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  std::ofstream(dir + "/tokenizer.json") << tok.dump();
}

}  // namespace slimkv::test
