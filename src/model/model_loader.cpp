#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "model/model.h"
#include "model/tensor_shard.h"
#include "model/weight_packing.h"

namespace slimkv {

std::vector<WeightView*> LayerWeights::matrices() {
  std::vector<WeightView*> v = {&wq_a, &wq_b, &wq, &wkv_a, &wk, &wv};
  for (auto* list : {&k_b, &v_b}) {
    for (WeightView& w : *list) v.push_back(&w);
  }
  for (WeightView* w : {&wo, &w1, &w3, &w2, &router}) v.push_back(w);
  for (size_t e = 0; e < exp_gate.size(); ++e) {
    for (auto* list : {&exp_gate, &exp_up, &exp_down}) {
      if (e < list->size()) v.push_back(&(*list)[e]);
    }
  }
  for (WeightView* w : {&shexp_gate, &shexp_up, &shexp_down}) v.push_back(w);
  for (WeightView& w : wo_a) v.push_back(&w);
  for (WeightView* w : {&wkv, &wo_b, &hc_attn_fn, &hc_ffn_fn, &comp_wkv, &comp_wgate, &idx_proj, &idx_q_b,
                        &idx_comp_wkv, &idx_comp_wgate, &ssm_qkv, &ssm_z, &ssm_ba, &ssm_out}) {
    v.push_back(w);
  }
  std::erase_if(v, [](const WeightView* w) { return w->data == nullptr; });
  return v;
}

const float* Model::own_f32(std::vector<float> v) {
  owned_f32.push_back(std::make_unique<std::vector<float>>(std::move(v)));
  return owned_f32.back()->data();
}

WeightView make_weight(DType dtype, int64_t rows, int64_t cols, const void* data, uint64_t size_bytes,
                       const std::string& name) {
  SLIMKV_CHECK(dtype != DType::I32, "tensor '{}' is an integer table (I32), not a weight matrix", name);
  SLIMKV_CHECK(dtype_info(dtype).weight || dtype == DType::BF16,
               "tensor '{}' is {}: not a weight type here (FP8 / FP4 storage needs its block-scale tensor)", name,
               dtype_name(dtype));
  WeightView w{dtype, rows, cols, data};
  SLIMKV_CHECK(cols % dtype_block_elems(dtype) == 0, "tensor '{}': {} columns are not a multiple of the {} block",
               name, cols, dtype_name(dtype));
  uint64_t need = static_cast<uint64_t>(rows) * static_cast<uint64_t>(w.row_bytes());
  SLIMKV_CHECK(size_bytes == need, "tensor '{}': has {} bytes, expected {} for [{}, {}] {}", name, size_bytes, need,
               rows, cols, dtype_name(dtype));
  return w;
}

std::unique_ptr<Model> load_model(const ModelLoadOptions& opts) {
  namespace fs = std::filesystem;
  const std::string& p = opts.model_path;
  SLIMKV_CHECK(fs::exists(p), "model not found: '{}'", p);
  std::unique_ptr<Model> m;
  if (!fs::is_directory(p)) {
    std::error_code ec;
    const auto size = fs::file_size(p, ec);
    SLIMKV_CHECK(ec || size >= 4, "'{}' is {} bytes long: not a model file (empty or cut short)", p, ec ? 0 : size);
  }
  if (fs::is_directory(p)) {
    m = load_hf_model(p);
  } else {
    char magic[4] = {0, 0, 0, 0};
    std::ifstream(p, std::ios::binary).read(magic, 4);
    if (std::memcmp(magic, "GGUF", 4) == 0) {
      m = load_gguf_model(p);
    } else if (fs::path(p).extension() == ".gguf") {  // named GGUF but not one: say so, not "not a llama2.c file"
      fail("'{}' is not a GGUF file: it starts with bytes {:02x} {:02x} {:02x} {:02x}, not \"GGUF\"", p,
           static_cast<unsigned char>(magic[0]), static_cast<unsigned char>(magic[1]),
           static_cast<unsigned char>(magic[2]), static_cast<unsigned char>(magic[3]));
    } else if (fs::path(p).filename() == "model.safetensors") {
      m = load_hf_model(fs::path(p).parent_path().string());
    } else {
      m = load_llama2c_model(p, opts.tokenizer_path);
    }
  }
  m->path = p;
  m->config.finalize();
  m->config.validate();
  shard_for_tensor_parallel(*m, opts.shard);  // this rank's slice (nothing to do on one process)
  pack_weights_for_kernels(*m);
  return m;
}

}  // namespace slimkv
