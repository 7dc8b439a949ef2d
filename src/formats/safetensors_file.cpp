#include "formats/safetensors_file.h"

#include <nlohmann/json.hpp>

#include "core/byte_reader.h"
#include "core/checked_math.h"

namespace slimkv {

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(std::make_unique<MappedFile>(path)), what_(path) {
  parse(file_->bytes());
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::from_bytes(std::span<const uint8_t> bytes, const std::string& what) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->what_ = what;
  f->parse(bytes);
  return f;
}

void SafetensorsFile::parse(std::span<const uint8_t> bytes) {
  ByteReader r(bytes, what_);
  uint64_t header_len = r.read<uint64_t>("header length");
  SLIMKV_CHECK(header_len >= 2 && header_len <= r.remaining() && header_len <= (100u << 20),
               "{}: bad safetensors header length {} (file has {} bytes)", what_, header_len, r.size());
  std::string_view header = r.read_bytes(header_len, "header");
  const uint64_t data_start = r.offset();
  const uint64_t data_size = r.remaining();
  nlohmann::json j = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
  SLIMKV_CHECK(j.is_object(), "{}: safetensors header is not a JSON object", what_);
  for (auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      SLIMKV_CHECK(v.is_object(), "{}: __metadata__ is not an object", what_);
      for (auto& [k, mv] : v.items()) {
        if (mv.is_string()) metadata_[k] = mv.get<std::string>();
      }
      continue;
    }
    SLIMKV_CHECK(v.is_object() && v.contains("dtype") && v["dtype"].is_string() && v.contains("shape") &&
                     v["shape"].is_array() && v.contains("data_offsets") && v["data_offsets"].is_array() &&
                     v["data_offsets"].size() == 2,
                 "{}: tensor '{}' has a malformed header entry", what_, name);
    SafetensorsTensor t;
    t.name = name;
    std::string dt = v["dtype"].get<std::string>();
    uint64_t elem_bytes = 0;
    if (dt == "F32") { t.dtype = DType::F32; elem_bytes = 4; }
    else if (dt == "F16") { t.dtype = DType::F16; elem_bytes = 2; }
    else if (dt == "BF16") { t.dtype = DType::BF16; elem_bytes = 2; }
    else if (dt == "I32") { t.dtype = DType::I32; elem_bytes = 4; }  // integer tables (DeepSeek-V4's tid2eid)
    // DeepSeek's released weights: FP8 matrices, E8M0 block scales, FP4 pairs stored as int8 bytes.
    else if (dt == "F8_E4M3") { t.dtype = DType::F8_E4M3; elem_bytes = 1; }
    else if (dt == "F8_E8M0") { t.dtype = DType::E8M0; elem_bytes = 1; }
    else if (dt == "I8") { t.dtype = DType::I8; elem_bytes = 1; }
    else fail("{}: unsupported tensor type {} for tensor '{}'", what_, dt, name);
    uint64_t n = 1;
    SLIMKV_CHECK(v["shape"].size() <= 4, "{}: tensor '{}' has too many dims", what_, name);
    for (auto& d : v["shape"]) {
      SLIMKV_CHECK(d.is_number_unsigned() || (d.is_number_integer() && d.get<int64_t>() >= 0),
                   "{}: tensor '{}' has a bad dimension", what_, name);
      uint64_t dim = d.get<uint64_t>();
      SLIMKV_CHECK(dim <= (1ull << 40), "{}: tensor '{}' dimension {} is absurd", what_, name, dim);
      t.shape.push_back(static_cast<int64_t>(dim));
      n = checked_mul(n, dim, "tensor elements");
    }
    auto& off = v["data_offsets"];
    SLIMKV_CHECK(off[0].is_number_unsigned() && off[1].is_number_unsigned(), "{}: tensor '{}' has bad offsets",
                 what_, name);
    uint64_t b = off[0].get<uint64_t>(), e = off[1].get<uint64_t>();
    SLIMKV_CHECK(b <= e && e <= data_size, "{}: tensor '{}' byte range [{}, {}) is outside the data ({} bytes)",
                 what_, name, b, e, data_size);
    t.size_bytes = checked_mul(n, elem_bytes, "tensor bytes");
    SLIMKV_CHECK(e - b == t.size_bytes, "{}: tensor '{}' holds {} bytes but its shape needs {}", what_, name, e - b,
                 t.size_bytes);
    t.data = r.at(data_start + b);
    tensors_.emplace(name, std::move(t));
  }
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it != tensors_.end()) return &it->second;
  auto alias = metadata_.find(name);
  if (alias != metadata_.end()) {
    auto it2 = tensors_.find(alias->second);
    if (it2 != tensors_.end()) return &it2->second;
  }
  return nullptr;
}

}  // namespace slimkv
