#include "formats/gguf_writer.h"

#include <cmath>
#include <cstring>
#include <fstream>

#include "core/check.h"
#include "core/half.h"
#include "kernels/type_traits.h"

namespace slimkv {
namespace {

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}
void put_str(std::vector<uint8_t>& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}
uint32_t ggml_type(DType t) { return static_cast<uint32_t>(dtype_info(t).ggml_id); }

}  // namespace

void GgufWriter::add_u32(const std::string& k, uint32_t v) { put_str(kv_, k); put<uint32_t>(kv_, 4); put(kv_, v); ++num_kv_; }
void GgufWriter::add_i32(const std::string& k, int32_t v) { put_str(kv_, k); put<uint32_t>(kv_, 5); put(kv_, v); ++num_kv_; }
void GgufWriter::add_f32(const std::string& k, float v) { put_str(kv_, k); put<uint32_t>(kv_, 6); put(kv_, v); ++num_kv_; }
void GgufWriter::add_bool(const std::string& k, bool v) { put_str(kv_, k); put<uint32_t>(kv_, 7); put<uint8_t>(kv_, v); ++num_kv_; }
void GgufWriter::add_string(const std::string& k, const std::string& v) {
  put_str(kv_, k); put<uint32_t>(kv_, 8); put_str(kv_, v); ++num_kv_;
}
void GgufWriter::add_strings(const std::string& k, const std::vector<std::string>& v) {
  put_str(kv_, k); put<uint32_t>(kv_, 9); put<uint32_t>(kv_, 8); put<uint64_t>(kv_, v.size());
  for (auto& s : v) put_str(kv_, s);
  ++num_kv_;
}
void GgufWriter::add_f32s(const std::string& k, const std::vector<float>& v) {
  put_str(kv_, k); put<uint32_t>(kv_, 9); put<uint32_t>(kv_, 6); put<uint64_t>(kv_, v.size());
  for (float f : v) put(kv_, f);
  ++num_kv_;
}
void GgufWriter::add_i32s(const std::string& k, const std::vector<int32_t>& v) {
  put_str(kv_, k); put<uint32_t>(kv_, 9); put<uint32_t>(kv_, 5); put<uint64_t>(kv_, v.size());
  for (int32_t x : v) put(kv_, x);
  ++num_kv_;
}

void GgufWriter::add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& dims, const void* data,
                            size_t size_bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  tensors_.push_back({name, ggml_type(dtype), dims, std::vector<uint8_t>(p, p + size_bytes)});
}

std::vector<uint8_t> GgufWriter::header(uint32_t alignment, uint32_t version, std::vector<uint64_t>& offsets) const {
  SLIMKV_CHECK(version == 2 || version == 3, "GgufWriter writes GGUF v2 or v3, not v{}", version);
  std::vector<uint8_t> out;
  put<uint32_t>(out, 0x46554747);
  put<uint32_t>(out, version);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, num_kv_);
  out.insert(out.end(), kv_.begin(), kv_.end());
  uint64_t offset = 0;
  offsets.clear();
  for (auto& t : tensors_) {
    put_str(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) put<uint64_t>(out, static_cast<uint64_t>(d));
    put<uint32_t>(out, t.ggml_type);
    put<uint64_t>(out, offset);
    offsets.push_back(offset);
    offset += (t.data.size() + alignment - 1) / alignment * alignment;
  }
  out.resize((out.size() + alignment - 1) / alignment * alignment, 0);
  return out;
}

std::vector<uint8_t> GgufWriter::bytes(uint32_t alignment, uint32_t version) const {
  std::vector<uint64_t> offsets;
  std::vector<uint8_t> out = header(alignment, version, offsets);
  const size_t base = out.size();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    out.resize(base + offsets[i], 0);
    out.insert(out.end(), tensors_[i].data.begin(), tensors_[i].data.end());
  }
  return out;
}

// Streams the header, then each tensor padded to the alignment: no second copy of the data in memory.
void GgufWriter::write(const std::string& path) const {
  constexpr uint32_t kAlignment = 32;
  std::vector<uint64_t> offsets;
  const std::vector<uint8_t> head = header(kAlignment, 3, offsets);
  std::ofstream f(path, std::ios::binary);
  SLIMKV_CHECK(f.good(), "cannot write '{}'", path);
  f.write(reinterpret_cast<const char*>(head.data()), static_cast<std::streamsize>(head.size()));
  const std::vector<char> zeros(kAlignment, 0);
  uint64_t at = 0;  // bytes written after the header
  for (size_t i = 0; i < tensors_.size(); ++i) {
    f.write(zeros.data(), static_cast<std::streamsize>(offsets[i] - at));
    f.write(reinterpret_cast<const char*>(tensors_[i].data.data()), static_cast<std::streamsize>(tensors_[i].data.size()));
    at = offsets[i] + tensors_[i].data.size();
  }
  SLIMKV_CHECK(f.good(), "error writing '{}'", path);
}

std::vector<uint8_t> quantize_rows(DType dtype, const float* x, int64_t n) {
  const TypeTraits& t = type_traits(dtype);
  SLIMKV_CHECK(t.from_float != nullptr && t.info->weight, "quantize_rows: {} cannot be written", dtype_name(dtype));
  SLIMKV_CHECK(n % t.info->block_elems == 0, "quantize_rows: {} values are not whole {} blocks of {}", n,
               dtype_name(dtype), t.info->block_elems);
  std::vector<uint8_t> out(static_cast<size_t>(dtype_row_bytes(dtype, n)));
  t.from_float(x, out.data(), n);
  return out;
}

}  // namespace slimkv
