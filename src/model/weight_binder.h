// Fills a Model's weights from any TensorSource through a family's name table: checks every tensor's shape
// against the hyper-parameters, splits fused tensors (qkv, gate_up) and 3-D expert tensors into views, applies the
// family's HF fixes (row permutation, +1 norms) on owned copies, converts BF16 matrices to F32 once.
// Must not know: file formats or any particular family.
#pragma once
#include "model/family.h"
#include "model/model.h"
#include "model/tensor_source.h"

namespace slimkv {

// c may gain values only tensors give (vocab size from token_embd, rope_freqs factors). Throws Error naming the
// tensor and the shape it should have.
void bind_weights(const TensorSource& src, const ModelFamily& family, ModelConfig& c, Model& m);

}  // namespace slimkv
