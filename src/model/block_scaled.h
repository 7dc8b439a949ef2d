// DeepSeek's released weight storage, decoded at load time: FP8 e4m3 matrices with one scale per 128 x 128 block
// (a `.scale` sibling, E8M0 / F32 / BF16) -> F16 when every value is exact in F16, else F32 (the same numbers);
// FP4 e2m1 pairs in int8 bytes (low nibble first) with one E8M0 scale per 32 values -> MXFP4 blocks (the same
// numbers in GGML's layout). Must not know: tensor names beyond the sibling rule, families or hyper-parameters.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/tensor_source.h"

namespace slimkv {

constexpr int64_t kFp8ScaleBlock = 128;  // rows and columns per FP8 scale
constexpr int64_t kFp4ScaleBlock = 32;   // values per FP4 scale (MXFP4's block)

struct DecodedWeight {
  DType dtype = DType::F32;    // F16 / F32 (from FP8) or MXFP4 (from FP4)
  std::vector<uint8_t> bytes;  // [rows, cols] in dtype, row-major
};

// The names a block-scaled weight's scale may have: "x.weight" -> "x.scale" (DeepSeek-V4),
// "x.weight_scale_inv" (DeepSeek-V3's FP8 checkpoints).
std::vector<std::string> scale_names_for(const std::string& weight_name);

// w: F8_E4M3 [rows, cols]; scale: [ceil(rows / 128), ceil(cols / 128)] of E8M0, F32 or BF16.
DecodedWeight decode_fp8_block_scaled(const TensorRef& w, const TensorRef& scale, int64_t rows, int64_t cols);

// w: I8 [rows, cols / 2], value 2i in the low nibble of byte i; scale: E8M0 [rows, cols / 32].
DecodedWeight repack_fp4_as_mxfp4(const TensorRef& w, const TensorRef& scale, int64_t rows, int64_t cols);

// Either of the above by w's type (F8_E4M3: FP8, I8: FP4); cols counts values, not bytes.
bool is_block_scaled(DType t);
DecodedWeight decode_block_scaled(const TensorRef& w, const TensorRef& scale, int64_t rows, int64_t cols);

}  // namespace slimkv
