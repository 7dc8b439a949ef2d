// The record kinds a compression config appends beside a full-attention layer's own records — KIVI's residual window
// (kind Residual), select's index (kind SelectIndex) — one class per kind, each in its own file, registered once in
// stream_kinds.cpp. A kind says whether a config wants it and makes its stream from the layer's geometry; the layout
// links the layer to it (KvLayerGeometry::appended_streams), so writers loop over a layer's appended streams and only
// the reader that uses a kind names it (KvLayout::appended).
// Must not know: how rows are encoded or read (kv_codec, PagedAttention).
#pragma once
#include <string>
#include <vector>

#include "compress/compression_config.h"
#include "kv/kv_layout.h"

namespace slimkv {

class KvStreamKind {
 public:
  virtual ~KvStreamKind() = default;
  virtual KvRecordKind kind() const = 0;
  virtual bool wanted(const CompressionConfig& cc) const = 0;
  // The stream this kind appends for `layer` (a full-attention layer's geometry; the kind may note on it what its
  // readers need, e.g. the residual window's length).
  virtual KvLayerGeometry make_stream(const CompressionConfig& cc, KvLayerGeometry& layer) const = 0;
  virtual std::string describe(const KvLayerGeometry& stream) const = 0;  // a line of `plan` / `eval`'s table
};

const KvStreamKind& residual_window_kind();  // stream_kind_residual.cpp
const KvStreamKind& select_index_kind();     // stream_kind_select_index.cpp
// Every kind, in the order their streams are appended; the one of a record kind (null: not an appended kind).
const std::vector<const KvStreamKind*>& stream_kinds();
const KvStreamKind* stream_kind_of(KvRecordKind kind);
// Appends, after the layout's own streams, each wanted kind's stream for every full-attention layer, linked both ways
// (the layer's appended_streams, the stream's source_layer).
void append_streams(const CompressionConfig& cc, KvLayout& layout);

}  // namespace slimkv
