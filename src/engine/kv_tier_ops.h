// What rank 0's disk tier did to its block pools in one step, for the other ranks of a tensor-parallel job (each
// keeps a tier of its own heads' records, engine/kv_offload.h): blocks to copy out before they are reused, and
// blocks read back into free ids — in the order rank 0 did them (a block saved, then refilled, in that order). Each
// rank reports the reads it could not serve; rank 0 forgets those blocks (they are computed instead). As bytes:
// little-endian, length-checked. Must not know: MPI or requests.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kv/block_pool.h"

namespace slimkv {

struct KvTierOp {
  uint8_t restore = 0;  // 0: save the block's records under key; 1: read key's records into the block
  uint8_t pad[3] = {};
  int32_t pool = 0;
  BlockId block = -1;
  int32_t pad2 = 0;
  BlockHash key = 0;
};

struct KvTierOps {
  std::vector<KvTierOp> ops;
  std::vector<int32_t> tokens;  // [ops.size(), block_size] each block's tokens (the tier stores and checks them)
  uint8_t wait = 0;             // 1: saves wait for room in the write queue (the shutdown save), not dropped
  bool empty() const { return ops.empty(); }
  int32_t num_restores() const {
    int32_t n = 0;
    for (const KvTierOp& op : ops) n += op.restore;
    return n;
  }
};

void encode_kv_tier_ops(const KvTierOps& ops, std::vector<uint8_t>& out);
// Throws Error on bytes that are not encoded ops (short, lengths past the end, tokens not a whole block per op).
KvTierOps decode_kv_tier_ops(std::span<const uint8_t> bytes);

}  // namespace slimkv
