// Encoding of one KV head's row into the cache's storage dtype and back, and the fixed randomized Hadamard
// rotation applied before quantizing (it spreads outlier channels so a few bits suffice, as in QuaRot and
// TurboQuant). Scalar reference code: it runs once per written token, not in the attention loop.
// Must not know: blocks, sequences or layers.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace slimkv {

// dst: kv_head_record_bytes(dtype, head_dim) bytes.
void encode_kv_head(const float* x, int32_t head_dim, KvDtype dtype, uint8_t* dst);
void decode_kv_head(const uint8_t* src, int32_t head_dim, KvDtype dtype, float* out);
// The 16 Lloyd-Max levels of the unit normal that tq4 indexes (ascending), for vectorised decoders.
const float* tq4_levels();

// A record of two parts, [0, split) and [split, head_dim), each encoded (and scaled) on its own
// (kv_record_bytes); split 0 = encode_kv_head / decode_kv_head.
void encode_kv_record(const float* x, int32_t head_dim, int32_t split, KvDtype dtype, uint8_t* dst);
void decode_kv_record(const uint8_t* src, int32_t head_dim, int32_t split, KvDtype dtype, float* out);
// hadamard_rotate / _unrotate of each part (both powers of two); split 0 = the whole row.
void hadamard_rotate_record(float* x, int32_t head_dim, int32_t split);
void hadamard_unrotate_record(float* x, int32_t head_dim, int32_t split);

// In-place orthonormal rotation x <- H x with H = Walsh-Hadamard(head_dim) * diag(signs) / sqrt(head_dim);
// head_dim must be a power of two. The signs are fixed (seeded), the same for every layer and head.
void hadamard_rotate(float* x, int32_t head_dim);
// The inverse rotation x <- H^T x.
void hadamard_unrotate(float* x, int32_t head_dim);

}  // namespace slimkv
