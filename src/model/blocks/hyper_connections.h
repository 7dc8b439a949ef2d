// Hyper-connections (DeepSeek-V4's mHC, family deepseek4): the residual is hc streams per token. begin() copies
// the embedding into every stream; around a sub-block pre() gives its input (a mix of the streams) and post() folds
// its output back; head() mixes the streams into DecoderForward's residual, which the classifier reads.
// Owns: the streams and the current site's mixes. Must not know: what the sub-blocks compute.
#pragma once
#include <vector>

#include "model/blocks/block.h"
#include "model/decoder_forward.h"
#include "model/weight_binder.h"

namespace slimkv {

// Where a hyper-connection mix sits: around the attention or the FFN sub-block.
enum class HcSite : uint8_t { Attn, Ffn };

class HyperConnections : public Block {
 public:
  explicit HyperConnections(const Model&) {}
  static void bind_layer(LayerBinder& b, int32_t layer);  // the layer's attention and FFN mixes
  static void bind_head(LayerBinder& b);                  // the head's mix (model-wide)
  void begin(DecoderForward& f);                                  // streams = the embedding, hc_mult times
  void pre(DecoderForward& f, int32_t layer, HcSite site, float* out);  // out[T, dim] = the sub-block's input
  void post(DecoderForward& f, const float* y);                   // streams = post * y + comb · streams
  void head(DecoderForward& f);                                   // f.residual() = the head's mix of the streams

 private:
  std::vector<float> streams_;  // [T, hc, dim] the residual streams
  std::vector<float> tmp_;      // [T, hc, dim] streams being rewritten
  std::vector<float> flat_;     // [T, hc * dim] RMS-normed streams (the mixes' input)
  std::vector<float> mix_;      // [T, (2 + hc) * hc] mixes of the current site
  std::vector<float> pre_;      // [T, hc] pre weights of the current site (or the head's)
  std::vector<float> post_;     // [T, hc] post weights of the current site
  std::vector<float> comb_;     // [T, hc * hc] Sinkhorn-normalised combine matrix, element (dst, src) at dst + hc*src
};

}  // namespace slimkv
