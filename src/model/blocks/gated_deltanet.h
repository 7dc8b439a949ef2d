// Gated DeltaNet linear attention (Qwen3-Next's recurrent layers, LayerConfig::delta_net). qkv = W·x goes through
// a causal depthwise convolution (K taps: each channel sees its last K inputs) and SiLU; q and k are L2-normalised
// per head, and each value head h keeps a state S [head_v, head_k] updated per token by the gated delta rule
//   S = exp(g)·S;   d = β·(v − S·k);   S += d ⊗ k;   o = S·q / sqrt(head_k)
// with g = softplus(α + dt_bias)·a (a = −exp(A_log), as stored) and β = σ(b); value head h reads key head
// h / (value heads / key heads). o is RMS-normed per head, times silu(z), and projected out.
// Its KV stream is the sequence's whole state — one recurrent-state block (kv_layout.h: KvGroupKind::Recurrent):
// the convolution's last K − 1 inputs, then every head's S — read where a chunk starts, left where it ends, and
// copied into a snapshot block after the token the batch names (the prefix cache's state at a prompt boundary),
// and in a speculative verify chunk into a draft-state block after each token but the last (the rollback).
// Owns: its scratch and each layer's stream index. Must not know: block tables or prefix hashing.
#pragma once
#include <vector>

#include "model/blocks/block.h"
#include "model/decoder_forward.h"
#include "model/weight_binder.h"

namespace slimkv {

class GatedDeltaNet : public Block {
 public:
  explicit GatedDeltaNet(const Model& m);
  // Binds layer's weights (qkv, z, β/α, the convolution, dt_bias, a, the gated norm, out): the family's
  // ModelFamily::bind_attention for its recurrent layers.
  static void bind(LayerBinder& b, int32_t layer);
  // The layer's one KV stream: its recurrent state, state_floats() F32 values per sequence.
  static std::vector<KvLayerSpec> layer_streams(const ModelConfig& c, int32_t layer);
  // out[T, dim] = the layer's linear attention of in[T, dim]; advances every sequence's state in the cache.
  void run(DecoderForward& f, int32_t layer, const float* in, float* out);

 private:
  // One sequence's chunk: convolution, normalisation, gates and the recurrence, into core_ rows [first, first + n).
  void run_sequence(DecoderForward& f, int32_t layer, const StateSlots& s, float* state, float* snapshot);
  void convolve(const DeltaNetConfig& d, const float* kernel, const StateSlots& s, float* conv_state,
                float* snapshot_conv);
  void recur(DecoderForward& f, const StateSlots& s, float* ssm_state, float* snapshot_ssm);
  // The [conv | ssm] states after each of a verify chunk's tokens but the last (drafts_[j]: after token j).
  std::vector<float*> drafts_;

  std::vector<int32_t> stream_;  // [layers] the layer's stream in kv_layer_specs
  std::vector<float> qkv_;       // [T, conv_dim] projected q | k | v, then (convolved, SiLU) in place
  std::vector<float> z_;         // [T, value_dim] the output gate
  std::vector<float> ba_;        // [T, 2 * v_heads] β and α logits, grouped per key head: [b (r) | a (r)]
  std::vector<float> window_;    // [K - 1 + T, conv_dim] a sequence's conv inputs: its state rows, then its tokens
  std::vector<float> gate_;      // [T, v_heads] g = softplus(α + dt_bias) · a
  std::vector<float> beta_;      // [T, v_heads] β = σ(b)
  std::vector<float> core_;      // [T, value_dim] o per value head, then gated-normed in place
};

}  // namespace slimkv
