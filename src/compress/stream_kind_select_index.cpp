// Select's index as an appended stream kind: per token and KV head, kv_select_rank int8 / int4 values of the key's
// sketch (keys only: v_in_k with v_dim = k_dim), in a full-attention table of its own. Its pages hold their records
// by columns (kernels/index_page.h), which the writer and the scorer know; tables, pools and prefix hits do not.
#include "compress/stream_kinds.h"

namespace slimkv {
namespace {

class SelectIndexKind final : public KvStreamKind {
 public:
  KvRecordKind kind() const override { return KvRecordKind::SelectIndex; }
  bool wanted(const CompressionConfig& cc) const override { return cc.select_sketch(); }
  KvLayerGeometry make_stream(const CompressionConfig& cc, KvLayerGeometry& layer) const override {
    KvLayerGeometry x;
    x.num_kv_heads = layer.num_kv_heads;
    x.head_dim_k = layer.head_dim_k;
    x.head_dim_v = layer.head_dim_k;
    x.k_dim = x.v_dim = cc.kv_select_rank;
    x.dtype = x.v_dtype = cc.select_dtype();
    x.rotate = x.dtype == KvDtype::Int4;  // 16 levels: spread the leading direction's energy over the codes
    x.v_in_k = true;
    x.spec = KvGroupSpec::full();
    return x;
  }
  std::string describe(const KvLayerGeometry& s) const override {
    return fmt::format("select index: layer {}'s keys, a rank-{} {} sketch", s.source_layer, s.k_dim,
                       kv_dtype_name(s.dtype));
  }
};

}  // namespace

const KvStreamKind& select_index_kind() {
  static const SelectIndexKind kind;
  return kind;
}

}  // namespace slimkv
