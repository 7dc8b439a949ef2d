#include "model/summary_merger.h"

#include <algorithm>

#include "core/check.h"
#include "kernels/kv_codec.h"

namespace slimkv {

void apply_summary_fold(KvStorage& kv, const SummaryFold& f) {
  const KvLayout& layout = kv.layout();
  SLIMKV_CHECK(f.group >= 0 && f.group < static_cast<int32_t>(layout.groups.size()) && f.dst_block >= 0 &&
               f.src_block >= 0 && f.slot >= 0 && f.slot < layout.block_size_tokens,
               "summary fold: group {}, block {} slot {} from block {}", f.group, f.dst_block, f.slot, f.src_block);
  const int32_t pool_blocks = kv.num_blocks(layout.group_pool(f.group));
  SLIMKV_CHECK(f.dst_block < pool_blocks && f.src_block < pool_blocks, "summary fold: block {} into {} outside the "
               "pool of {}", f.src_block, f.dst_block, pool_blocks);
  const int32_t bs = layout.block_size_tokens;
  const int64_t dst_slot = static_cast<int64_t>(f.dst_block) * bs + f.slot;
  std::vector<float> acc, row;
  for (int32_t l : layout.groups[f.group].layers) {
    const KvLayerGeometry& g = layout.layers[l];
    for (int which = 0; which < (g.v_in_k ? 1 : 2); ++which) {  // a latent cache's value is its key
      const int32_t dim = which == 0 ? g.k_dim : g.v_dim, split = which == 0 ? g.k_split() : 0;
      acc.assign(dim, 0.0f);
      row.resize(dim);
      for (int32_t h = 0; h < g.num_kv_heads; ++h) {
        uint8_t* dst = which == 0 ? kv.k_head(l, dst_slot, h) : kv.v_head(l, dst_slot, h);
        if (f.weight_before > 0) {
          decode_kv_record(dst, dim, split, g.record_dtype(which), row.data());
          for (int32_t d = 0; d < dim; ++d) acc[d] = row[d] * f.weight_before;
        } else {
          std::fill(acc.begin(), acc.end(), 0.0f);
        }
        for (int32_t r = 0; r < bs; ++r) {
          const int64_t src_slot = static_cast<int64_t>(f.src_block) * bs + r;
          const uint8_t* src = which == 0 ? kv.k_head(l, src_slot, h) : kv.v_head(l, src_slot, h);
          decode_kv_record(src, dim, split, g.record_dtype(which), row.data());
          for (int32_t d = 0; d < dim; ++d) acc[d] += f.weight * row[d];
        }
        const float inv = 1.0f / (f.weight_before + f.weight * bs);
        for (int32_t d = 0; d < dim; ++d) acc[d] *= inv;
        encode_kv_record(acc.data(), dim, split, g.record_dtype(which), dst);
      }
    }
  }
}

void merge_into_summaries(KvStorage& kv, KvCacheManager& mgr, SeqKv& seq, int32_t group,
                          const std::vector<KvCacheManager::Evicted>& evicted, std::vector<SummaryFold>* record) {
  if (evicted.empty() || !mgr.ensure_summary_block(seq, group)) return;  // no block to spare: the evicted are dropped
  GroupKv& gk = seq.groups[group];
  const int32_t bs = kv.layout().block_size_tokens;
  for (const auto& e : evicted) {
    SummaryFold f;
    f.group = group;
    f.dst_block = gk.summary_block;
    f.slot = e.logical % bs;
    f.src_block = e.block;
    f.weight = std::max(e.score, 1e-6f);  // per token of the block
    f.weight_before = gk.summary_weight[f.slot];
    apply_summary_fold(kv, f);
    if (record) record->push_back(f);
    gk.summary_weight[f.slot] = f.weight_before + f.weight * bs;
    gk.summary_count[f.slot] += static_cast<float>(bs);
  }
}

}  // namespace slimkv
