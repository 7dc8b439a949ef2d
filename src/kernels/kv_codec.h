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
// The 16 integer levels tq4 indexes (ascending; a value decodes to the row's scale times its level), for vectorised
// decoders.
const int8_t* tq4_levels();
// Attention over rows with integer codes scores a query on a 12-bit grid (as llama.cpp quantizes q for its
// quantized caches, but finer: an int8 query cost kjv-4k 0.3 points of top-1 agreement with an int8 cache, this
// one nothing measurable): q <- d * round(q / d) with d = max|q| / kQueryGridMax, in place; returns d (0 for a zero
// q). The kernels may then compute its dot products in integers (int16 x int8 codes, VNNI), exactly: |sum| <= 1024
// values x 127 x 4095 < 2^31.
inline constexpr int32_t kQueryGridMax = 4095;
float round_query_to_grid(float* q, int32_t n);

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
