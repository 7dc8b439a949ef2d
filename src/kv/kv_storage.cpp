#include "kv/kv_storage.h"

#include <sys/mman.h>

#include "core/check.h"
#include "core/checked_math.h"

namespace slimkv {

KvStorage::KvStorage(const KvLayout& layout, int32_t num_blocks) : layout_(layout), num_blocks_(num_blocks) {
  SLIMKV_CHECK(num_blocks > 0, "KV cache needs at least one block (got {})", num_blocks);
  const uint64_t tokens = checked_mul(num_blocks, layout.block_size_tokens, "KV cache size");
  uint64_t bytes = 0;
  SLIMKV_CHECK(layout.num_tensors() > 0, "KV layout has no storage tensors (assign_groups not called)");
  for (int32_t l : layout.tensor_layer) {
    bytes = checked_add(bytes, checked_mul(tokens, layout.layers[l].bytes_per_token(), "KV cache size"),
                        "KV cache size");
  }
  size_bytes_ = static_cast<int64_t>(bytes);
  mapping_ = ::mmap(nullptr, size_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  SLIMKV_CHECK(mapping_ != MAP_FAILED, "cannot reserve {} bytes of KV cache memory", size_bytes_);
  uint8_t* p = static_cast<uint8_t*>(mapping_);
  for (int32_t l : layout.tensor_layer) {
    const KvLayerGeometry& g = layout.layers[l];
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
