// The tensors of a model file, whatever the format, under one interface: name -> dtype, row-major shape
// (outermost first) and bytes. GGUF dims are reversed into that order (a 3-D expert tensor is [experts, rows,
// cols]); safetensors shards (model.safetensors.index.json) are one source.
// Must not know: families or hyper-parameters (the weight binder maps names to layers).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace slimkv {

class GgufFile;
class SafetensorsFile;

struct TensorRef {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // row-major, outermost first
  const uint8_t* data = nullptr;
  uint64_t size_bytes = 0;
};

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual const TensorRef* find(const std::string& name) const = 0;
  virtual std::string source() const = 0;
  virtual bool is_gguf() const = 0;
};

std::unique_ptr<TensorSource> gguf_tensors(const GgufFile& g);
// shards: every safetensors file of the checkpoint; a tensor name present in two shards is an error.
std::unique_ptr<TensorSource> safetensors_tensors(const std::vector<std::shared_ptr<SafetensorsFile>>& shards,
                                                  const std::string& source);

}  // namespace slimkv
