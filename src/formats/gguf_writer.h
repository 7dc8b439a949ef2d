// Writes GGUF v3 files (metadata + tensors): used by tests to build fixtures in memory, and by tools that
// export models (synthetic weights, re-quantized copies). Must not know: llama semantics.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace slimkv {

class GgufWriter {
 public:
  void add_u32(const std::string& key, uint32_t v);
  void add_i32(const std::string& key, int32_t v);
  void add_f32(const std::string& key, float v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, const std::string& v);
  void add_strings(const std::string& key, const std::vector<std::string>& v);
  void add_f32s(const std::string& key, const std::vector<float>& v);
  void add_i32s(const std::string& key, const std::vector<int32_t>& v);
  // dims in ggml order (innermost first); data must hold exactly the tensor's bytes.
  void add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& dims, const void* data,
                  size_t size_bytes);

  std::vector<uint8_t> bytes(uint32_t alignment = 32, uint32_t version = 3) const;  // version 2 or 3
  void write(const std::string& path) const;  // as bytes() (alignment 32, v3), streamed to the file

 private:
  // The file up to the tensor data (padded to alignment); offsets: each tensor's offset from there.
  std::vector<uint8_t> header(uint32_t alignment, uint32_t version, std::vector<uint64_t>& offsets) const;
  struct TensorEntry {
    std::string name;
    uint32_t ggml_type;
    std::vector<int64_t> dims;
    std::vector<uint8_t> data;
  };
  std::vector<uint8_t> kv_;  // serialized key/values
  uint64_t num_kv_ = 0;
  std::vector<TensorEntry> tensors_;
};

// Encodes f32 values (n a multiple of the block size) as any writable weight type: the type traits' reference
// quantizer (kernels/type_traits.h; round-to-nearest, GGML's layouts). llama-quantize makes production files.
std::vector<uint8_t> quantize_rows(DType dtype, const float* x, int64_t n);

}  // namespace slimkv
