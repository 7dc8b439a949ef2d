#include "model/lora_adapter.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <regex>

#include "formats/gguf_file.h"

namespace slimkv {
namespace {

// The base weight a GGUF tensor name stands for, or null when slimkv does not apply adapters to it.
const WeightView* base_weight(const Model& m, const std::string& name, bool* is_output) {
  *is_output = name == "output.weight";
  if (*is_output) return &m.output;
  static const std::regex re(R"(blk\.(\d+)\.(attn_q|attn_k|attn_v|attn_output|ffn_gate|ffn_up|ffn_down)\.weight)");
  std::smatch mt;
  if (!std::regex_match(name, mt, re)) return nullptr;
  if (mt[1].length() > 6) return nullptr;
  const int64_t l = std::stoll(mt[1]);
  if (l < 0 || l >= static_cast<int64_t>(m.layers.size())) return nullptr;
  const LayerWeights& w = m.layers[l];
  const std::string kind = mt[2];
  const WeightView* v = kind == "attn_q" ? &w.wq : kind == "attn_k" ? &w.wk : kind == "attn_v" ? &w.wv
                      : kind == "attn_output" ? &w.wo : kind == "ffn_gate" ? &w.w1 : kind == "ffn_up" ? &w.w3
                                                                                      : &w.w2;
  return v->data ? v : nullptr;
}

// A GGUF tensor as f32 rows: [dims[1], dims[0]].
std::vector<float> tensor_f32(const GgufTensorInfo& t) {
  WeightView v;
  v.dtype = t.dtype;
  v.cols = t.dims[0];
  v.rows = t.dims.size() > 1 ? t.dims[1] : 1;
  v.data = t.data;
  std::vector<float> out(static_cast<size_t>(v.rows * v.cols));
  for (int64_t r = 0; r < v.rows; ++r) dequantize_row(v, r, out.data() + r * v.cols);
  return out;
}

// The adapter's identity for the prefix cache: its tensors' names and bytes (as mapped, the very bytes loaded),
// alpha and the user's scale.
uint64_t adapter_fingerprint(const GgufFile& g, float alpha, float scale) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 1099511628211ull;
  };
  for (const GgufTensorInfo& t : g.tensors()) {
    mix(t.name.data(), t.name.size());
    mix(t.data, t.size_bytes);
  }
  mix(&alpha, sizeof alpha);
  mix(&scale, sizeof scale);
  return h | 1;  // never 0 (0: no adapter)
}

}  // namespace

std::shared_ptr<const LoraAdapter> load_lora_adapter(const Model& model, const std::string& name,
                                                     const std::string& path, float user_scale) {
  SLIMKV_CHECK(model.shard.ranks == 1, "LoRA adapter '{}': not supported under tensor parallelism yet", name);
  SLIMKV_CHECK(std::isfinite(user_scale), "LoRA adapter '{}': the scale must be finite", name);
  GgufFile g(path);
  SLIMKV_CHECK(g.get_string_opt("general.type").value_or("") == "adapter" &&
                   g.get_string_opt("adapter.type").value_or("") == "lora",
               "{}: not a LoRA adapter (general.type 'adapter' and adapter.type 'lora' expected)", path);
  const std::string arch = g.get_string_opt("general.architecture").value_or("");
  if (model.path.size() > 5 && model.path.compare(model.path.size() - 5, 5, ".gguf") == 0) {
    const std::string base = GgufFile(model.path).get_string_opt("general.architecture").value_or("");
    SLIMKV_CHECK(arch == base, "{}: an adapter for '{}', the model is '{}'", path, arch, base);
  }
  auto ad = std::make_shared<LoraAdapter>();
  ad->name = name;
  ad->path = path;
  ad->alpha = static_cast<float>(g.get_float_opt("adapter.lora.alpha").value_or(0.0));
  ad->user_scale = user_scale;
  ad->fingerprint = adapter_fingerprint(g, ad->alpha, user_scale);
  std::unordered_map<std::string, const GgufTensorInfo*> a_of, b_of;
  for (const GgufTensorInfo& t : g.tensors()) {
    auto ends = [&](const char* s) { return t.name.size() > 7 && t.name.compare(t.name.size() - 7, 7, s) == 0; };
    if (ends(".lora_a")) a_of[t.name.substr(0, t.name.size() - 7)] = &t;
    else if (ends(".lora_b")) b_of[t.name.substr(0, t.name.size() - 7)] = &t;
    else SLIMKV_CHECK(false, "{}: tensor '{}' is neither a .lora_a nor a .lora_b", path, t.name);
  }
  for (const auto& [base_name, a] : a_of) {
    SLIMKV_CHECK(b_of.count(base_name), "{}: '{}.lora_a' has no .lora_b", path, base_name);
    const GgufTensorInfo* b = b_of.at(base_name);
    const bool norm = base_name.size() > 12 && base_name.compare(base_name.size() - 12, 12, "_norm.weight") == 0;
    if (norm) continue;  // llama.cpp skips norms
    bool is_output = false;
    const WeightView* w = base_weight(model, base_name, &is_output);
    SLIMKV_CHECK(w, "{}: '{}' is not a weight slimkv applies adapters to (attention / dense FFN projections and "
                 "output.weight)", path, base_name);
    SLIMKV_CHECK(!is_output || !model.output_tied,
                 "{}: 'output.weight': this model ties its output head to token_embd (llama.cpp refuses it too)", path);
    SLIMKV_CHECK(a->dims.size() == 2 && b->dims.size() == 2 && a->dims[0] == w->cols && b->dims[1] == w->rows &&
                     a->dims[1] == b->dims[0] && a->dims[1] > 0,
                 "{}: '{}' lora_a [{}] / lora_b [{}] do not fit the base weight [{}, {}]", path, base_name,
                 fmt::join(a->dims, ", "), fmt::join(b->dims, ", "), w->cols, w->rows);
    SLIMKV_CHECK(a->dims[1] <= kMaxLoraRank, "{}: '{}' has rank {} (at most {})", path, base_name, a->dims[1],
                 kMaxLoraRank);
    SLIMKV_CHECK(!ad->targets.count(w->data), "{}: '{}' names a weight another target names", path, base_name);
    LoraTarget t;
    t.tensor = base_name;
    t.is_output = is_output;
    t.rank = static_cast<int32_t>(a->dims[1]);
    t.in = static_cast<int32_t>(w->cols);
    t.out = static_cast<int32_t>(w->rows);
    t.a = tensor_f32(*a);
    t.b = tensor_f32(*b);
    t.scale = ad->alpha != 0.0f ? user_scale * ad->alpha / static_cast<float>(t.rank) : user_scale;
    ad->targets.emplace(w->data, std::move(t));
  }
  for (const auto& [base_name, b] : b_of) {
    SLIMKV_CHECK(a_of.count(base_name), "{}: '{}.lora_b' has no .lora_a", path, base_name);
  }
  SLIMKV_CHECK(!ad->targets.empty(), "{}: the adapter has no tensors", path);
  return ad;
}

}  // namespace slimkv
