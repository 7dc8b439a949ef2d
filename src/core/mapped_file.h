// A read-only memory-mapped file (model weights are used in place, never copied).
// Owns: the mapping's lifetime. Must not know: what the bytes mean.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace slimkv {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws Error with the path on failure
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size_bytes() const { return size_bytes_; }
  std::span<const uint8_t> bytes() const { return {data_, size_bytes_}; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_bytes_ = 0;
};

std::string read_text_file(const std::string& path);  // whole file; throws Error

}  // namespace slimkv
