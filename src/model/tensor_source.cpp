#include "model/tensor_source.h"

#include "core/check.h"
#include "formats/gguf_file.h"
#include "formats/safetensors_file.h"

namespace slimkv {
namespace {

class MapSource : public TensorSource {
 public:
  MapSource(std::string src, bool gguf) : src_(std::move(src)), gguf_(gguf) {}
  const TensorRef* find(const std::string& name) const override {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
  }
  std::string source() const override { return src_; }
  bool is_gguf() const override { return gguf_; }
  void add(TensorRef t) {
    SLIMKV_CHECK(!tensors_.count(t.name), "{}: tensor '{}' appears twice", src_, t.name);
    tensors_.emplace(t.name, std::move(t));
  }

 private:
  std::string src_;
  bool gguf_;
  std::map<std::string, TensorRef> tensors_;
};

}  // namespace

std::unique_ptr<TensorSource> gguf_tensors(const GgufFile& g) {
  auto s = std::make_unique<MapSource>(g.source(), true);
  for (const GgufTensorInfo& t : g.tensors()) {
    TensorRef r{t.name, t.dtype, std::vector<int64_t>(t.dims.rbegin(), t.dims.rend()), t.data, t.size_bytes};
    s->add(std::move(r));
  }
  return s;
}

std::unique_ptr<TensorSource> safetensors_tensors(const std::vector<std::shared_ptr<SafetensorsFile>>& shards,
                                                  const std::string& source) {
  auto s = std::make_unique<MapSource>(source, false);
  for (const auto& f : shards) {
    for (const auto& [name, t] : f->tensors()) s->add(TensorRef{name, t.dtype, t.shape, t.data, t.size_bytes});
    for (const auto& [alias, target] : f->metadata()) {  // __metadata__ aliases (tied tensors stored once)
      const SafetensorsTensor* t = f->find(alias);
      if (t && !s->find(alias) && f->tensors().count(target)) s->add(TensorRef{alias, t->dtype, t->shape, t->data,
                                                                              t->size_bytes});
    }
  }
  return s;
}

}  // namespace slimkv
