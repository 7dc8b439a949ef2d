// KIVI's residual window as an appended stream kind: a layer's last kv_residual_tokens rows again at a wider dtype,
// in a window table of its own; attention reads them there and older rows from the layer's own records.
#include "compress/stream_kinds.h"

namespace slimkv {
namespace {

class ResidualWindowKind final : public KvStreamKind {
 public:
  KvRecordKind kind() const override { return KvRecordKind::Residual; }
  bool wanted(const CompressionConfig& cc) const override { return cc.residual_tokens() > 0; }
  KvLayerGeometry make_stream(const CompressionConfig& cc, KvLayerGeometry& layer) const override {
    KvLayerGeometry r = layer;  // the same heads, sizes and rotation (one query basis for both), a wider dtype
    r.dtype = r.v_dtype = cc.residual_dtype();
    r.spec = KvGroupSpec::window(cc.residual_tokens());
    layer.residual_tokens = cc.residual_tokens();
    return r;
  }
  std::string describe(const KvLayerGeometry& s) const override {
    return fmt::format("residual window: the last {} tokens", s.spec.window_tokens);
  }
};

}  // namespace

const KvStreamKind& residual_window_kind() {
  static const ResidualWindowKind kind;
  return kind;
}

}  // namespace slimkv
