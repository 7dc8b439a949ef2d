// Scalar reference functions of every quantized type (rows of the type traits table, kernels/type_traits.cpp):
// dequantize (bit-exact with GGML's dequantize_row_*), quantize (simple round-to-nearest quantizers for the GGUF
// writer and activations; activation quantizers Q8_0 / Q8_1 / Q8_K follow GGML's reference) and the dot product of
// a weight row with its paired activation row. n = values in the row (a multiple of the block size).
// Must not know: ISAs, threads, tensors.
#pragma once
#include <cstdint>

namespace slimkv::quant_ref {

// 32-value blocks (quant_ref_small.cpp)
void dequant_q4_1(const void* w, float* y, int64_t n);
void dequant_q5_0(const void* w, float* y, int64_t n);
void dequant_q5_1(const void* w, float* y, int64_t n);
void dequant_iq4_nl(const void* w, float* y, int64_t n);
void dequant_mxfp4(const void* w, float* y, int64_t n);
void dequant_q8_1(const void* w, float* y, int64_t n);
void quantize_q4_1(const float* x, void* w, int64_t n);
void quantize_q5_0(const float* x, void* w, int64_t n);
void quantize_q5_1(const float* x, void* w, int64_t n);
void quantize_iq4_nl(const float* x, void* w, int64_t n);
void quantize_mxfp4(const float* x, void* w, int64_t n);
void quantize_q8_1(const float* x, void* w, int64_t n);
float dot_q4_1(const void* w, const void* x, int64_t n);    // x: Q8_1
float dot_q5_0(const void* w, const void* x, int64_t n);    // x: Q8_0
float dot_q5_1(const void* w, const void* x, int64_t n);    // x: Q8_1
float dot_iq4_nl(const void* w, const void* x, int64_t n);  // x: Q8_0
float dot_mxfp4(const void* w, const void* x, int64_t n);   // x: Q8_0

// 256-value super-blocks (quant_ref_k.cpp)
void dequant_q2_k(const void* w, float* y, int64_t n);
void dequant_q3_k(const void* w, float* y, int64_t n);
void dequant_q4_k(const void* w, float* y, int64_t n);
void dequant_q5_k(const void* w, float* y, int64_t n);
void dequant_q6_k(const void* w, float* y, int64_t n);
void dequant_iq4_xs(const void* w, float* y, int64_t n);
void dequant_q8_k(const void* w, float* y, int64_t n);
void quantize_q2_k(const float* x, void* w, int64_t n);
void quantize_q3_k(const float* x, void* w, int64_t n);
void quantize_q4_k(const float* x, void* w, int64_t n);
void quantize_q5_k(const float* x, void* w, int64_t n);
void quantize_q6_k(const float* x, void* w, int64_t n);
void quantize_iq4_xs(const float* x, void* w, int64_t n);
void quantize_q8_k(const float* x, void* w, int64_t n);  // GGML's quantize_row_q8_K_ref
float dot_q2_k(const void* w, const void* x, int64_t n);  // x: Q8_K (all below)
float dot_q3_k(const void* w, const void* x, int64_t n);
float dot_q4_k(const void* w, const void* x, int64_t n);
float dot_q5_k(const void* w, const void* x, int64_t n);
float dot_q6_k(const void* w, const void* x, int64_t n);
float dot_iq4_xs(const void* w, const void* x, int64_t n);

// Q3_K's 12 packed bytes -> 16 scales in [0, 63] (subtract 32 for the signed scale).
void q3_k_scales(const uint8_t* packed, int8_t out[16]);
// Q4_K / Q5_K's 12 packed bytes -> 8 scales and 8 mins (6 bits each).
void k4_scales(const uint8_t* packed, uint8_t sc[8], uint8_t mn[8]);

}  // namespace slimkv::quant_ref
