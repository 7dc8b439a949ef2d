// Fills a Model's weights from any TensorSource through a family's name table: checks every tensor's shape
// against the hyper-parameters, splits fused tensors (qkv, gate_up) and 3-D expert tensors into views, applies the
// family's HF fixes (row permutation, +1 norms) on owned copies, converts BF16 matrices to F32 once.
// Must not know: file formats or any particular family.
#pragma once
#include "model/family.h"
#include "model/model.h"
#include "model/tensor_source.h"

namespace slimkv {

// What a block that owns its weights binds them with (ModelFamily::bind_layer / bind_model call it): the family's
// tensor names for a role, shape-checked and converted as every other tensor. Errors name the tensor.
class LayerBinder {
 public:
  virtual ~LayerBinder() = default;
  virtual const ModelConfig& config() const = 0;
  virtual Model& model() = 0;
  virtual std::string source() const = 0;
  // The file's tensor for role (layer l, expert e), or null when the family does not name it or the file lacks an
  // optional one (required_here = false: absent is fine here too); a required one that is missing is an error.
  virtual const TensorRef* find(TensorRole r, int32_t l = 0, int32_t e = 0, bool required_here = true) const = 0;
  // Whether the family names this role at all (in this file's format).
  virtual bool names(TensorRole r) const = 0;
  virtual WeightView matrix(TensorRole r, int32_t l, int64_t rows, int64_t cols, int32_t heads = 0) = 0;
  virtual WeightView matrix(const TensorRef& t, int64_t rows, int64_t cols) = 0;
  virtual const float* vector(TensorRole r, int32_t l, int64_t n, int32_t heads = 0) = 0;
  // A small matrix as owned row-major floats (any stored type).
  virtual const float* dense_f32(TensorRole r, int32_t l, int64_t rows, int64_t cols) = 0;
  // Experts (or heads): GGUF one 3-D [E, rows, cols] tensor, HF one tensor per expert; count 0 = the model's experts.
  virtual std::vector<WeightView> experts(TensorRole r, int32_t l, int64_t rows, int64_t cols, int32_t count = 0) = 0;
  static WeightView slice_rows(const WeightView& w, int64_t r0, int64_t n) {
    return WeightView{w.dtype, n, w.cols, w.row(r0)};
  }
};

// c may gain values only tensors give (vocab size from token_embd, rope_freqs factors). Throws Error naming the
// tensor and the shape it should have.
void bind_weights(const TensorSource& src, const ModelFamily& family, ModelConfig& c, Model& m);

}  // namespace slimkv
