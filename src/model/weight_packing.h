// Re-lays out a loaded model's F32, F16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K and IQ4_XS matrices for the kernels of the active ISA (AVX-512: 16-row panels),
// once, after loading (and, on request, dequantizes them). The embedding table keeps its rows (lookups need them).
// Must not know: file formats.
#pragma once
#include "model/model.h"

namespace slimkv {

void pack_weights_for_kernels(Model& model, Isa isa = active_isa());

// Replaces every quantized or F16 matrix (and the embedding table) by its F32 dequantization (the type traits'
// reference), then packs for the kernels: the model then computes in f32 what llama.cpp's `.dequant_logits`
// reference computes. Returns the number of matrices converted.
int64_t dequantize_weights(Model& model, Isa isa = active_isa());

}  // namespace slimkv
