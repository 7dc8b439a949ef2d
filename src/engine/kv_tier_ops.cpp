#include "engine/kv_tier_ops.h"

#include <cstring>

#include "core/check.h"

namespace slimkv {

void encode_kv_tier_ops(const KvTierOps& ops, std::vector<uint8_t>& out) {
  out.clear();
  auto put = [&out](const void* p, size_t n) {
    out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  };
  const int64_t n_ops = static_cast<int64_t>(ops.ops.size()), n_tokens = static_cast<int64_t>(ops.tokens.size());
  put(&n_ops, sizeof n_ops);
  put(&n_tokens, sizeof n_tokens);
  put(&ops.wait, 1);
  put(ops.ops.data(), ops.ops.size() * sizeof(KvTierOp));
  put(ops.tokens.data(), ops.tokens.size() * sizeof(int32_t));
}

KvTierOps decode_kv_tier_ops(std::span<const uint8_t> bytes) {
  KvTierOps out;
  int64_t n_ops = 0, n_tokens = 0;
  constexpr size_t head = 2 * sizeof(int64_t) + 1;
  SLIMKV_CHECK(bytes.size() >= head, "KV tier ops: {} bytes, short of the header", bytes.size());
  std::memcpy(&n_ops, bytes.data(), sizeof n_ops);
  std::memcpy(&n_tokens, bytes.data() + sizeof n_ops, sizeof n_tokens);
  out.wait = bytes[2 * sizeof(int64_t)];
  const uint64_t rest = bytes.size() - head;
  SLIMKV_CHECK(n_ops >= 0 && n_tokens >= 0 && static_cast<uint64_t>(n_ops) <= rest / sizeof(KvTierOp) &&
                   static_cast<uint64_t>(n_tokens) <= rest / sizeof(int32_t) &&
                   n_ops * sizeof(KvTierOp) + n_tokens * sizeof(int32_t) == rest,
               "KV tier ops: {} ops and {} tokens do not fill {} bytes", n_ops, n_tokens, rest);
  SLIMKV_CHECK(n_ops == 0 ? n_tokens == 0 : n_tokens % n_ops == 0, "KV tier ops: {} tokens for {} blocks", n_tokens,
               n_ops);
  out.ops.resize(static_cast<size_t>(n_ops));
  out.tokens.resize(static_cast<size_t>(n_tokens));
  std::memcpy(out.ops.data(), bytes.data() + head, out.ops.size() * sizeof(KvTierOp));
  std::memcpy(out.tokens.data(), bytes.data() + head + out.ops.size() * sizeof(KvTierOp),
              out.tokens.size() * sizeof(int32_t));
  return out;
}

}  // namespace slimkv
