#include "compress/compression_config.h"

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/mapped_file.h"

namespace slimkv {

KvDtype CompressionConfig::dtype() const {
  if (!enabled) return KvDtype::F32;
  if (kv_cache_dtype == "auto" || kv_cache_dtype == "f32") return KvDtype::F32;
  if (kv_cache_dtype == "f16") return KvDtype::F16;
  if (kv_cache_dtype == "int8") return KvDtype::Int8;
  if (kv_cache_dtype == "int4") return KvDtype::Int4;
  fail("--kv-cache-dtype must be one of auto, f32, f16, int8, int4 (got '{}')", kv_cache_dtype);
}

bool CompressionConfig::rotate() const {
  if (!enabled) return false;
  if (kv_quant_rotation == "none") return false;
  if (kv_quant_rotation == "hadamard") return true;
  KvDtype d = dtype();
  return d == KvDtype::Int8 || d == KvDtype::Int4;  // auto
}

void CompressionConfig::validate(int32_t head_dim) const {
  SLIMKV_CHECK(kv_quant_rotation == "auto" || kv_quant_rotation == "hadamard" || kv_quant_rotation == "none",
               "--kv-quant-rotation must be auto, hadamard or none (got '{}')", kv_quant_rotation);
  KvDtype d = dtype();  // validates the name
  if (kv_quant_rotation == "hadamard" && enabled) {
    SLIMKV_CHECK(head_dim > 0 && (head_dim & (head_dim - 1)) == 0,
                 "--kv-quant-rotation hadamard needs a power-of-two head dim (the model has {})", head_dim);
  }
  SLIMKV_CHECK(d != KvDtype::Int4 || head_dim % 2 == 0, "--kv-cache-dtype int4 needs an even head dim (got {})",
               head_dim);
}

KvLayout CompressionConfig::layout(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim, int32_t bs) const {
  validate(head_dim);
  bool rot = rotate() && (head_dim & (head_dim - 1)) == 0;  // auto rotation only where it applies
  return KvLayout::uniform(num_layers, num_kv_heads, head_dim, bs, dtype(), rot);
}

std::string CompressionConfig::fingerprint() const {
  return fmt::format("kv dtype={} rotation={}", kv_dtype_name(dtype()), rotate());  // what the stored bytes depend on
}

CompressionConfig CompressionConfig::from_json_file(const std::string& path) {
  auto j = nlohmann::json::parse(read_text_file(path), nullptr, false);
  SLIMKV_CHECK(j.is_object(), "{}: a KV config must be a JSON object", path);
  CompressionConfig c;
  for (auto& [k, v] : j.items()) {
    auto str = [&] {
      SLIMKV_CHECK(v.is_string(), "{}: '{}' must be a string", path, k);
      return v.get<std::string>();
    };
    if (k == "kv_cache_dtype") c.kv_cache_dtype = str();
    else if (k == "kv_quant_rotation") c.kv_quant_rotation = str();
    else if (k == "kv_cache_compression") {
      std::string s = v.is_boolean() ? (v.get<bool>() ? "on" : "off") : str();
      SLIMKV_CHECK(s == "on" || s == "off", "{}: kv_cache_compression must be on or off", path);
      c.enabled = s == "on";
    } else if (k == "name" || k == "description") {
      continue;
    } else {
      fail("{}: unknown or not yet supported key '{}' (supported: kv_cache_compression, kv_cache_dtype, "
           "kv_quant_rotation)", path, k);
    }
  }
  return c;
}

std::string describe_plan(const KvLayout& layout) {
  std::string out = "layer  dtype  rotation  bytes/token  vs f16\n";
  int64_t total = 0, f16 = 0;
  for (int32_t l = 0; l < layout.num_layers(); ++l) {
    const auto& g = layout.layers[l];
    const int64_t base = 2LL * g.num_kv_heads * g.head_dim * 2;
    total += g.bytes_per_token();
    f16 += base;
    out += fmt::format("{:>5}  {:>5}  {:>8}  {:>11}  {:>5.1f}%\n", l, kv_dtype_name(g.dtype),
                       g.rotate ? "hadamard" : "none", g.bytes_per_token(), 100.0 * g.bytes_per_token() / base);
  }
  out += fmt::format("total  {} bytes/token = {:.1f}% of f16 ({} bytes/token)", total, 100.0 * total / f16, f16);
  return out;
}

}  // namespace slimkv
