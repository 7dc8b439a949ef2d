// Re-lays out a loaded model's F32 matrices for the kernels of the active ISA (AVX-512: 16-row panels), once,
// after loading. The embedding table keeps its rows (lookups need them). Must not know: file formats.
#pragma once
#include "model/model.h"

namespace slimkv {

void pack_weights_for_kernels(Model& model, Isa isa = active_isa());

}  // namespace slimkv
