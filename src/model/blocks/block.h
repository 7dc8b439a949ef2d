// What the stateful blocks of model/blocks/ share: the base DecoderForward keeps them by (one instance of each
// block type per forward pass, made on first use: its scratch and derived weights live in it, not in
// DecoderForward), and the options callers set on blocks before a step.
// Must not know: any block's arithmetic.
#pragma once
#include <cstdint>
#include <string>

namespace slimkv {

class Block {
 public:
  virtual ~Block() = default;
};

// How latent-attention layers attend: over the latents with absorbed queries (decode's choice), by decompressing
// the sequences' latents into per-head K and V once per step (cheaper for long prefill chunks), or per step by a
// cost model.
enum class MlaAttention : uint8_t { Absorbed, Decompressed, Auto };
MlaAttention parse_mla_attention(const std::string& s);  // absorbed | decompressed | auto; throws otherwise

struct BlockOptions {
  MlaAttention mla_attention = MlaAttention::Absorbed;  // --mla-attention
  int32_t index_topk = 0;  // the sparse indexer's top-k (--kv-sparse-topk on a natively compressed model); 0 = model's
};

}  // namespace slimkv
