#include "kv/kv_storage.h"

#include <sys/mman.h>

#include "core/check.h"
#include "core/checked_math.h"

namespace slimkv {

KvStorage::KvStorage(const KvLayout& layout, int32_t num_blocks)
    : KvStorage(layout, std::vector<int32_t>(layout.num_pools(), num_blocks)) {}

KvStorage::KvStorage(const KvLayout& layout, std::vector<int32_t> pool_blocks)
    : layout_(layout), pool_blocks_(std::move(pool_blocks)) {
  SLIMKV_CHECK(static_cast<int32_t>(pool_blocks_.size()) == layout.num_pools(), "KV storage: {} pool sizes for {} pools",
               pool_blocks_.size(), layout.num_pools());
  for (int32_t n : pool_blocks_) SLIMKV_CHECK(n > 0, "KV cache needs at least one block per pool (got {})", n);
  uint64_t bytes = 0;
  SLIMKV_CHECK(layout.num_tensors() > 0, "KV layout has no storage tensors (assign_groups not called)");
  auto tokens_of = [&](int32_t t) {
    return checked_mul(pool_blocks_[layout.tensor_pool[t]], layout.block_size_tokens, "KV cache size");
  };
  for (int32_t t = 0; t < layout.num_tensors(); ++t) {
    bytes = checked_add(bytes, checked_mul(tokens_of(t), layout.layers[layout.tensor_layer[t]].bytes_per_token(),
                                           "KV cache size"), "KV cache size");
  }
  size_bytes_ = static_cast<int64_t>(bytes);
  mapping_ = ::mmap(nullptr, size_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  SLIMKV_CHECK(mapping_ != MAP_FAILED, "cannot reserve {} bytes of KV cache memory", size_bytes_);
  // 2 MiB pages where the kernel offers them (transparent huge pages, "madvise" or "always"; best effort): a
  // select walk reads rows scattered over the whole cache, and with 4 KiB pages nearly every row missed the TLB
  // (kjv-4k, 16K x 8, tq4 + select: the prefetch of each gathered row stalled on its page walk).
  ::madvise(mapping_, static_cast<size_t>(size_bytes_), MADV_HUGEPAGE);
  uint8_t* p = static_cast<uint8_t*>(mapping_);
  for (int32_t t = 0; t < layout.num_tensors(); ++t) {
    const KvLayerGeometry& g = layout.layers[layout.tensor_layer[t]];
    const uint64_t tokens = tokens_of(t);
    k_.push_back(p);
    p += tokens * g.k_row_bytes();
    v_.push_back(p);
    p += tokens * g.v_row_bytes();
  }
}

KvStorage::~KvStorage() {
  if (mapping_ && mapping_ != MAP_FAILED) ::munmap(mapping_, size_bytes_);
}

}  // namespace slimkv
