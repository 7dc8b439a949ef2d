// GGUF v1/v2/v3 container parser: metadata key/values and tensor descriptors over a mapped file.
// Every count, string length, dimension and offset is bounded by the file size with overflow-checked math.
// Must not know: llama hyper-parameters or tokenizers (those read the metadata through this API).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"

namespace slimkv {

enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12
};

struct GgufValue {
  GgufType type = GgufType::U8;
  GgufType elem_type = GgufType::U8;  // for arrays
  int64_t i = 0;                      // integer and bool scalars
  double f = 0;                       // float scalars
  std::string s;                      // string scalar
  std::vector<int64_t> ints;          // integer/bool arrays
  std::vector<double> floats;         // float arrays
  std::vector<std::string> strings;   // string arrays
  bool is_array() const { return type == GgufType::ARRAY; }
  bool is_int() const;
  bool is_float() const { return type == GgufType::F32 || type == GgufType::F64; }
};

struct GgufTensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> dims;  // ggml order: innermost first ([64, 512] = 512 rows of 64)
  uint64_t offset_bytes = 0;  // relative to the data section
  uint64_t size_bytes = 0;
  const uint8_t* data = nullptr;
  int64_t num_elements() const;
};

class GgufFile {
 public:
  explicit GgufFile(const std::string& path);  // throws Error on any malformed input
  static std::unique_ptr<GgufFile> from_bytes(std::span<const uint8_t> bytes, const std::string& what);  // for fuzzing

  uint32_t version() const { return version_; }
  const std::map<std::string, GgufValue>& metadata() const { return kv_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  const GgufValue* find(const std::string& key) const;
  const GgufTensorInfo* find_tensor(const std::string& name) const;
  // Typed accessors: throw a clear Error when the key is missing or has the wrong type.
  int64_t get_int(const std::string& key) const;
  std::optional<int64_t> get_int_opt(const std::string& key) const;
  double get_float(const std::string& key) const;  // accepts ints too
  std::optional<double> get_float_opt(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::optional<std::string> get_string_opt(const std::string& key) const;
  const std::string& source() const { return what_; }

 private:
  GgufFile() = default;
  void parse(std::span<const uint8_t> bytes);

  std::unique_ptr<MappedFile> file_;
  std::string what_;
  uint32_t version_ = 0;
  std::map<std::string, GgufValue> kv_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

}  // namespace slimkv
