#include "model/blocks/block.h"

#include "core/check.h"

namespace slimkv {

MlaAttention parse_mla_attention(const std::string& s) {
  if (s == "absorbed") return MlaAttention::Absorbed;
  if (s == "decompressed") return MlaAttention::Decompressed;
  if (s == "auto") return MlaAttention::Auto;
  fail("--mla-attention must be absorbed, decompressed or auto (got '{}')", s);
}

}  // namespace slimkv
