// Element types of weights and activations: the data half of the type traits table (storage geometry, GGML's type
// number, activation pairing). Must not know: how a type is computed with (kernels/type_traits.h) or parsed.
#pragma once
#include <cstdint>
#include <string_view>

namespace slimkv {

// Every element type of a weight or an activation, one row each in kDTypeInfo below (geometry, GGML's id, the
// activation type its dot product pairs with); kernels/type_traits.h adds each row's functions. Block layouts are
// GGML's, bit for bit (core/quant_blocks.h). I32: integer tables (DeepSeek-V4's token -> experts map), never a
// matmul operand. Q8_1 / Q8_K: activation-only types (llama.cpp's pairing for Q4_1/Q5_1 and the K-quants).
// F8_E4M3 / E8M0 / I8: the storage of DeepSeek's released safetensors (FP8 matrices, their power-of-two block
// scales, FP4 pairs in int8 bytes), decoded at load time (model/block_scaled.h), never a matmul operand.
enum class DType : uint8_t {
  F32, F16, BF16, Q8_0, Q4_0, I32,
  Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4,
  Q8_1, Q8_K,
  F8_E4M3, E8M0, I8,
};
constexpr int kNumDTypes = 22;

constexpr int64_t kQuantBlock = 32;  // elements per Q8_0 / Q4_0 / Q4_1 / Q5_x / IQ4_NL / MXFP4 block

struct Q8_0Block {  // 34 bytes: scale (fp16) + 32 int8
  uint16_t d;
  int8_t qs[32];
};
struct Q4_0Block {  // 18 bytes: scale (fp16) + 32 nibbles, low nibbles = elements 0..15, high = 16..31
  uint16_t d;
  uint8_t qs[16];
};
static_assert(sizeof(Q8_0Block) == 34 && sizeof(Q4_0Block) == 18);

struct DTypeInfo {
  DType type;
  std::string_view name;   // GGML's spelling
  int32_t ggml_id;         // GGML's type number (what GGUF files store); -1 = none
  int64_t block_elems;     // values per block
  int64_t block_bytes;     // bytes per block
  DType act;               // activations are quantized to this type for the dot product (F32 = not quantized)
  bool weight;             // may be a matmul weight
};

// One row per type, in enum order.
inline constexpr DTypeInfo kDTypeInfo[kNumDTypes] = {
    {DType::F32, "F32", 0, 1, 4, DType::F32, true},
    {DType::F16, "F16", 1, 1, 2, DType::F32, true},
    {DType::BF16, "BF16", 30, 1, 2, DType::F32, false},  // converted to F32 at load time
    {DType::Q8_0, "Q8_0", 8, 32, 34, DType::Q8_0, true},
    {DType::Q4_0, "Q4_0", 2, 32, 18, DType::Q8_0, true},
    {DType::I32, "I32", 26, 1, 4, DType::F32, false},
    {DType::Q4_1, "Q4_1", 3, 32, 20, DType::Q8_1, true},
    {DType::Q5_0, "Q5_0", 6, 32, 22, DType::Q8_0, true},
    {DType::Q5_1, "Q5_1", 7, 32, 24, DType::Q8_1, true},
    {DType::Q2_K, "Q2_K", 10, 256, 84, DType::Q8_K, true},
    {DType::Q3_K, "Q3_K", 11, 256, 110, DType::Q8_K, true},
    {DType::Q4_K, "Q4_K", 12, 256, 144, DType::Q8_K, true},
    {DType::Q5_K, "Q5_K", 13, 256, 176, DType::Q8_K, true},
    {DType::Q6_K, "Q6_K", 14, 256, 210, DType::Q8_K, true},
    {DType::IQ4_NL, "IQ4_NL", 20, 32, 18, DType::Q8_0, true},
    {DType::IQ4_XS, "IQ4_XS", 23, 256, 136, DType::Q8_K, true},
    {DType::MXFP4, "MXFP4", 39, 32, 17, DType::Q8_0, true},
    {DType::Q8_1, "Q8_1", 9, 32, 36, DType::Q8_1, false},
    {DType::Q8_K, "Q8_K", 15, 256, 292, DType::Q8_K, false},
    {DType::F8_E4M3, "F8_E4M3", -1, 1, 1, DType::F32, false},  // safetensors' spellings; no GGML type
    {DType::E8M0, "F8_E8M0", -1, 1, 1, DType::F32, false},
    {DType::I8, "I8", 24, 1, 1, DType::F32, false},
};

constexpr const DTypeInfo& dtype_info(DType t) { return kDTypeInfo[static_cast<int>(t)]; }
constexpr int64_t dtype_block_elems(DType t) { return dtype_info(t).block_elems; }
constexpr int64_t dtype_block_bytes(DType t) { return dtype_info(t).block_bytes; }
constexpr std::string_view dtype_name(DType t) { return dtype_info(t).name; }
// Bytes of a row of n values (n a multiple of the block size).
constexpr int64_t dtype_row_bytes(DType t, int64_t n) { return n / dtype_block_elems(t) * dtype_block_bytes(t); }

constexpr bool dtype_table_in_order() {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (static_cast<int>(kDTypeInfo[i].type) != i) return false;
  }
  return true;
}
static_assert(dtype_table_in_order(), "kDTypeInfo rows must follow the enum's order");
constexpr bool dtype_activations_line_up() {  // a weight's activation blocks cover the same values as its blocks
  for (const DTypeInfo& i : kDTypeInfo) {
    if (i.weight && i.act != DType::F32 && dtype_block_elems(i.act) != i.block_elems) return false;
  }
  return true;
}
static_assert(dtype_activations_line_up(), "activation blocks must line up with weight blocks");

// How one KV head's row (head_dim values of one token) is stored in the KV cache.
//   F32: head_dim floats. F16: head_dim halves. Int8 / Int4: an fp16 scale, then head_dim signed values
//   (int4: two per byte, low nibble first, stored +8), symmetric absmax quantization per token and head.
//   Tq4 / Tq3 (TurboQuant-style, after the rotation): an fp16 RMS of the row, then each value's index into the
//   Lloyd-Max codebook of the unit normal (the rotated coordinates' distribution), 16 or 8 levels; tq4 two a
//   byte low nibble first, tq3 packed little-endian 3 bits each.
enum class KvDtype : uint8_t { F32, F16, Int8, Int4, Tq4, Tq3 };

constexpr int64_t kv_head_record_bytes(KvDtype t, int64_t head_dim) {
  switch (t) {
    case KvDtype::F32: return head_dim * 4;
    case KvDtype::F16: return head_dim * 2;
    case KvDtype::Int8: return 2 + head_dim;
    case KvDtype::Int4: return 2 + (head_dim + 1) / 2;
    case KvDtype::Tq4: return 2 + (head_dim + 1) / 2;
    case KvDtype::Tq3: return 2 + (3 * head_dim + 7) / 8;
  }
  return 0;
}
// int8 / int4 / tq4 / tq3: every stored value is the row's scale times a small integer (the quantized dtypes: the
// Hadamard rotation applies to them, and attention may score their codes in integers).
constexpr bool kv_dtype_has_integer_codes(KvDtype t) {
  return t == KvDtype::Int8 || t == KvDtype::Int4 || t == KvDtype::Tq4 || t == KvDtype::Tq3;
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
    case KvDtype::Tq4: return "tq4";
    case KvDtype::Tq3: return "tq3";
  }
  return "?";
}

}  // namespace slimkv
