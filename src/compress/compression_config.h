// The one validated configuration of KV-cache compression (flags map 1:1 to fields; also loadable from a JSON
// file whose keys are the flag names with underscores). Today: storage dtype (f32/f16/int8/int4) and the
// Hadamard rotation before quantizing. Must not know: requests or kernels.
#pragma once
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "kv/kv_layout.h"

namespace slimkv {

struct CompressionConfig {
  bool enabled = true;                   // --kv-cache-compression on|off (off: plain f32 cache, bit-identical)
  std::string kv_cache_dtype = "auto";   // --kv-cache-dtype auto|f32|f16|int8|int4 (auto = f32)
  std::string kv_quant_rotation = "auto";  // --kv-quant-rotation auto|hadamard|none (auto: hadamard for int8/int4)

  // Throws one clear Error per contradiction. head_dim is the model's.
  void validate(int32_t head_dim) const;
  KvDtype dtype() const;
  bool rotate() const;
  // The per-layer storage plan for a model.
  KvLayout layout(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim, int32_t block_size) const;
  std::string fingerprint() const;  // goes into the prefix-cache salt
  // Loads a JSON object {"kv_cache_dtype": "int8", ...}; unknown keys are an error that names them.
  static CompressionConfig from_json_file(const std::string& path);
};

// "layer | dtype | rotation | bytes/token | vs f16" lines for the start-up log and the eval report.
std::string describe_plan(const KvLayout& layout);

}  // namespace slimkv
