// Element types of weights and activations, with their storage geometry (block size, bytes per block).
// Must not know: file formats (each parser maps its own type codes onto DType).
#pragma once
#include <cstdint>
#include <string_view>

namespace slimkv {

// I32: integer tables (DeepSeek-V4's token -> experts map), never a matmul operand.
enum class DType : uint8_t { F32, F16, BF16, Q8_0, Q4_0, I32 };

constexpr int64_t kQuantBlock = 32;  // elements per Q8_0 / Q4_0 block

struct Q8_0Block {  // 34 bytes: scale (fp16) + 32 int8
  uint16_t d;
  int8_t qs[32];
};
struct Q4_0Block {  // 18 bytes: scale (fp16) + 32 nibbles, low nibbles = elements 0..15, high = 16..31
  uint16_t d;
  uint8_t qs[16];
};
static_assert(sizeof(Q8_0Block) == 34 && sizeof(Q4_0Block) == 18);

constexpr int64_t dtype_block_elems(DType t) { return (t == DType::Q8_0 || t == DType::Q4_0) ? kQuantBlock : 1; }
constexpr int64_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::Q8_0: return 34;
    case DType::Q4_0: return 18;
    case DType::I32: return 4;
  }
  return 0;
}
constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::Q8_0: return "Q8_0";
    case DType::Q4_0: return "Q4_0";
    case DType::I32: return "I32";
  }
  return "?";
}

// How one KV head's row (head_dim values of one token) is stored in the KV cache.
//   F32: head_dim floats. F16: head_dim halves. Int8 / Int4: an fp16 scale, then head_dim signed values
//   (int4: two per byte, low nibble first, stored +8), symmetric absmax quantization per token and head.
enum class KvDtype : uint8_t { F32, F16, Int8, Int4 };

constexpr int64_t kv_head_record_bytes(KvDtype t, int64_t head_dim) {
  switch (t) {
    case KvDtype::F32: return head_dim * 4;
    case KvDtype::F16: return head_dim * 2;
    case KvDtype::Int8: return 2 + head_dim;
    case KvDtype::Int4: return 2 + (head_dim + 1) / 2;
  }
  return 0;
}
// A record split in two parts, each with its own scale (MLA: [latent | rope key], split = the latent size); split 0
// (or >= head_dim) = one part. F32 / F16 records are the same bytes either way.
constexpr int64_t kv_record_bytes(KvDtype t, int64_t head_dim, int64_t split) {
  if (split <= 0 || split >= head_dim) return kv_head_record_bytes(t, head_dim);
  return kv_head_record_bytes(t, split) + kv_head_record_bytes(t, head_dim - split);
}
constexpr std::string_view kv_dtype_name(KvDtype t) {
  switch (t) {
    case KvDtype::F32: return "f32";
    case KvDtype::F16: return "f16";
    case KvDtype::Int8: return "int8";
    case KvDtype::Int4: return "int4";
  }
  return "?";
}

}  // namespace slimkv
