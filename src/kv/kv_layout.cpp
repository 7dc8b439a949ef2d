#include "kv/kv_layout.h"

namespace slimkv {

KvLayout KvLayout::uniform(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim, int32_t block_size_tokens,
                           KvDtype dtype, bool rotate) {
  KvLayout l;
  l.block_size_tokens = block_size_tokens;
  l.layers.assign(num_layers, KvLayerGeometry{num_kv_heads, head_dim, head_dim, head_dim, dtype, rotate});
  return l;
}

int64_t KvLayout::bytes_per_token() const {
  int64_t b = 0;
  for (const auto& g : layers) b += g.bytes_per_token();
  return b;
}

}  // namespace slimkv
