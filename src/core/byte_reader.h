// Bounds-checked little-endian reader over a byte span: the only way parsers read files.
// Every read checks the remaining length first; a short file becomes an Error, never a crash.
// Must not know: any file format.
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "core/check.h"

namespace slimkv {

class ByteReader {
 public:
  ByteReader(std::span<const uint8_t> bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {}

  size_t offset() const { return offset_; }
  size_t size() const { return bytes_.size(); }
  size_t remaining() const { return bytes_.size() - offset_; }
  const uint8_t* at(size_t off) const { return bytes_.data() + off; }

  void need(uint64_t n, const char* field) const {
    SLIMKV_CHECK(n <= remaining(), "{}: truncated file reading {} (need {} bytes at offset {}, {} left)", what_,
                 field, n, offset_, remaining());
  }
  void seek(size_t off) {
    SLIMKV_CHECK(off <= bytes_.size(), "{}: offset {} beyond end of file ({} bytes)", what_, off, bytes_.size());
    offset_ = off;
  }
  void skip(uint64_t n, const char* field) {
    need(n, field);
    offset_ += n;
  }

  template <typename T>
  T read(const char* field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return v;
  }

  std::string_view read_bytes(uint64_t n, const char* field) {
    need(n, field);
    std::string_view s(reinterpret_cast<const char*>(bytes_.data() + offset_), n);
    offset_ += n;
    return s;
  }

  const std::string& what() const { return what_; }

 private:
  std::span<const uint8_t> bytes_;
  std::string what_;
  size_t offset_ = 0;
};

}  // namespace slimkv
