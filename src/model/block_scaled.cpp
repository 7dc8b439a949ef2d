#include "model/block_scaled.h"

#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "core/quant_blocks.h"

namespace slimkv {
namespace {

std::string shape_of(const TensorRef& t) { return fmt::format("[{}]", fmt::join(t.shape, ", ")); }

float scale_at(const TensorRef& s, int64_t i) {
  switch (s.dtype) {
    case DType::E8M0: return e8m0_to_fp32(s.data[i]);
    case DType::F32: {
      float f;
      std::memcpy(&f, s.data + i * 4, 4);
      return f;
    }
    default: {  // BF16 (checked by the caller)
      uint16_t h;
      std::memcpy(&h, s.data + i * 2, 2);
      return bf16_to_fp32(h);
    }
  }
}

}  // namespace

std::vector<std::string> scale_names_for(const std::string& weight_name) {
  const std::string suffix = ".weight";
  if (weight_name.size() <= suffix.size() ||
      weight_name.compare(weight_name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return {weight_name + ".scale"};
  }
  const std::string base = weight_name.substr(0, weight_name.size() - suffix.size());
  return {base + ".scale", weight_name + "_scale_inv"};
}

DecodedWeight decode_fp8_block_scaled(const TensorRef& w, const TensorRef& s, int64_t rows, int64_t cols) {
  SLIMKV_CHECK(w.dtype == DType::F8_E4M3 && w.shape.size() == 2 && w.shape[0] == rows && w.shape[1] == cols &&
                   w.size_bytes == static_cast<uint64_t>(rows * cols),
               "tensor '{}' is {} of shape {} but the hyper-parameters need an F8_E4M3 [{}, {}]", w.name,
               dtype_name(w.dtype), shape_of(w), rows, cols);
  const int64_t br = (rows + kFp8ScaleBlock - 1) / kFp8ScaleBlock, bc = (cols + kFp8ScaleBlock - 1) / kFp8ScaleBlock;
  SLIMKV_CHECK(s.dtype == DType::E8M0 || s.dtype == DType::F32 || s.dtype == DType::BF16,
               "scale tensor '{}' of FP8 '{}' is {}; expected F8_E8M0, F32 or BF16", s.name, w.name, dtype_name(s.dtype));
  SLIMKV_CHECK(s.shape.size() == 2 && s.shape[0] == br && s.shape[1] == bc &&
                   s.size_bytes == static_cast<uint64_t>(br * bc * dtype_block_bytes(s.dtype)),
               "scale tensor '{}' has shape {}; FP8 '{}' [{}, {}] needs one scale per {} x {} block: [{}, {}]", s.name,
               shape_of(s), w.name, rows, cols, kFp8ScaleBlock, kFp8ScaleBlock, br, bc);
  std::vector<float> scales(static_cast<size_t>(br * bc));  // [br, bc]
  for (int64_t i = 0; i < br * bc; ++i) scales[i] = scale_at(s, i);
  // [rows, cols] the decoded values; F16 when all of them round-trip (e4m3 x a power of two almost always does).
  std::vector<float> f(static_cast<size_t>(rows * cols));
  bool f16_exact = true;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* src = w.data + r * cols;
    const float* row_scales = scales.data() + (r / kFp8ScaleBlock) * bc;
    for (int64_t c = 0; c < cols; ++c) {
      const float v = fp8_e4m3_to_fp32(src[c]) * row_scales[c / kFp8ScaleBlock];
      SLIMKV_CHECK(std::isfinite(v), "FP8 tensor '{}' has a non-finite value at [{}, {}] (NaN code or scale)", w.name,
                   r, c);
      f[r * cols + c] = v;
      f16_exact = f16_exact && fp16_to_fp32(fp32_to_fp16(v)) == v;
    }
  }
  DecodedWeight out;
  if (f16_exact) {
    out.dtype = DType::F16;
    out.bytes.resize(f.size() * 2);
    auto* h = reinterpret_cast<uint16_t*>(out.bytes.data());
    for (size_t i = 0; i < f.size(); ++i) h[i] = fp32_to_fp16(f[i]);
  } else {
    out.dtype = DType::F32;
    out.bytes.resize(f.size() * 4);
    std::memcpy(out.bytes.data(), f.data(), out.bytes.size());
  }
  return out;
}

DecodedWeight repack_fp4_as_mxfp4(const TensorRef& w, const TensorRef& s, int64_t rows, int64_t cols) {
  SLIMKV_CHECK(cols % kFp4ScaleBlock == 0, "FP4 tensor '{}': {} columns are not a multiple of {}", w.name, cols,
               kFp4ScaleBlock);
  SLIMKV_CHECK(w.dtype == DType::I8 && w.shape.size() == 2 && w.shape[0] == rows && w.shape[1] == cols / 2 &&
                   w.size_bytes == static_cast<uint64_t>(rows * cols / 2),
               "tensor '{}' is {} of shape {} but FP4 [{}, {}] is stored as I8 [{}, {}] (two values a byte)", w.name,
               dtype_name(w.dtype), shape_of(w), rows, cols, rows, cols / 2);
  const int64_t blocks = cols / kFp4ScaleBlock;
  SLIMKV_CHECK(s.dtype == DType::E8M0 && s.shape.size() == 2 && s.shape[0] == rows && s.shape[1] == blocks &&
                   s.size_bytes == static_cast<uint64_t>(rows * blocks),
               "scale tensor '{}' is {} of shape {}; FP4 '{}' [{}, {}] needs F8_E8M0 [{}, {}] (one per {} values)",
               s.name, dtype_name(s.dtype), shape_of(s), w.name, rows, cols, rows, blocks, kFp4ScaleBlock);
  // MXFP4: value = kMxfp4Values[code] * 2^(e - 128) = e2m1(code) * 2^(e - 127), the same numbers; the block holds
  // value j in the low nibble of qs[j] and value j + 16 in its high nibble.
  DecodedWeight out;
  out.dtype = DType::MXFP4;
  out.bytes.resize(static_cast<size_t>(rows * blocks) * sizeof(MXFP4Block));
  auto* dst = reinterpret_cast<MXFP4Block*>(out.bytes.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* src = w.data + r * (cols / 2) + b * (kFp4ScaleBlock / 2);
      auto code = [&](int j) { return (src[j / 2] >> (4 * (j % 2))) & 0xF; };
      MXFP4Block& o = dst[r * blocks + b];
      o.e = s.data[r * blocks + b];
      SLIMKV_CHECK(o.e != 255, "FP4 tensor '{}': scale {} of row {} is NaN (E8M0 255)", w.name, b, r);
      for (int j = 0; j < 16; ++j) o.qs[j] = static_cast<uint8_t>(code(j) | (code(j + 16) << 4));
    }
  }
  return out;
}

bool is_block_scaled(DType t) { return t == DType::F8_E4M3 || t == DType::I8; }

DecodedWeight decode_block_scaled(const TensorRef& w, const TensorRef& scale, int64_t rows, int64_t cols) {
  SLIMKV_CHECK(is_block_scaled(w.dtype), "tensor '{}' is {}, not FP8 or FP4 storage", w.name, dtype_name(w.dtype));
  return w.dtype == DType::I8 ? repack_fp4_as_mxfp4(w, scale, rows, cols) : decode_fp8_block_scaled(w, scale, rows, cols);
}

}  // namespace slimkv
