#include "compress/stream_kinds.h"

namespace slimkv {

const std::vector<const KvStreamKind*>& stream_kinds() {
  static const std::vector<const KvStreamKind*> kinds = {&residual_window_kind(), &select_index_kind()};
  return kinds;
}

const KvStreamKind* stream_kind_of(KvRecordKind kind) {
  for (const KvStreamKind* k : stream_kinds()) {
    if (k->kind() == kind) return k;
  }
  return nullptr;
}

void append_streams(const CompressionConfig& cc, KvLayout& out) {
  const int32_t num_streams = out.num_layers();
  for (const KvStreamKind* kind : stream_kinds()) {
    if (!kind->wanted(cc)) continue;
    for (int32_t l = 0; l < num_streams; ++l) {
      if (out.layers[l].kind != KvRecordKind::Attention || out.layers[l].spec.kind != KvGroupKind::FullAttention) {
        continue;
      }
      KvLayerGeometry s = kind->make_stream(cc, out.layers[l]);
      s.kind = kind->kind();
      s.source_layer = l;
      s.appended_streams.clear();
      out.layers[l].appended_streams.push_back(out.num_layers());
      out.layers.push_back(std::move(s));
    }
  }
}

}  // namespace slimkv
