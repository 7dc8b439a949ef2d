// Hugging Face safetensors parser: u64 header length, JSON header, raw little-endian tensor data.
// Checks every tensor's byte range against its dtype and shape and against the file size.
// Must not know: model architectures (the HF loader maps names to layers).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"

namespace slimkv {

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::F32;        // F32, F16, BF16, I32, F8_E4M3, E8M0 (F8_E8M0) or I8
  std::vector<int64_t> shape;      // outermost first ([rows, cols])
  const uint8_t* data = nullptr;
  uint64_t size_bytes = 0;
};

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  static std::unique_ptr<SafetensorsFile> from_bytes(std::span<const uint8_t> bytes, const std::string& what);

  const std::map<std::string, SafetensorsTensor>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Finds a tensor by name, following a __metadata__ alias (name -> other tensor) when the name is absent.
  const SafetensorsTensor* find(const std::string& name) const;

 private:
  SafetensorsFile() = default;
  void parse(std::span<const uint8_t> bytes);

  std::unique_ptr<MappedFile> file_;
  std::string what_;
  std::map<std::string, SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace slimkv
