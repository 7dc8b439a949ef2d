#include "model/summary_merger.h"

#include <algorithm>

#include "kernels/kv_codec.h"

namespace slimkv {

void merge_into_summaries(KvStorage& kv, KvCacheManager& mgr, SeqKv& seq, int32_t group,
                          const std::vector<KvCacheManager::Evicted>& evicted) {
  if (evicted.empty() || !mgr.ensure_summary_block(seq, group)) return;  // no block to spare: the evicted are dropped
  const KvLayout& layout = kv.layout();
  GroupKv& gk = seq.groups[group];
  const int32_t bs = layout.block_size_tokens;
  std::vector<float> acc, row;
  for (const auto& e : evicted) {
    const int32_t slot = e.logical % bs;
    const float w = std::max(e.score, 1e-6f);  // per token of the block
    const float w_old = gk.summary_weight[slot];
    const int64_t dst_slot = static_cast<int64_t>(gk.summary_block) * bs + slot;
    for (int32_t l : layout.groups[group].layers) {
      const KvLayerGeometry& g = layout.layers[l];
      for (int which = 0; which < (g.v_in_k ? 1 : 2); ++which) {  // a latent cache's value is its key
        const int32_t dim = which == 0 ? g.k_dim : g.v_dim, split = which == 0 ? g.k_split() : 0;
        acc.assign(dim, 0.0f);
        row.resize(dim);
        for (int32_t h = 0; h < g.num_kv_heads; ++h) {
          uint8_t* dst = which == 0 ? kv.k_head(l, dst_slot, h) : kv.v_head(l, dst_slot, h);
          if (w_old > 0) {
            decode_kv_record(dst, dim, split, g.record_dtype(which), row.data());
            for (int32_t d = 0; d < dim; ++d) acc[d] = row[d] * w_old;
          } else {
            std::fill(acc.begin(), acc.end(), 0.0f);
          }
          for (int32_t r = 0; r < bs; ++r) {
            const int64_t src_slot = static_cast<int64_t>(e.block) * bs + r;
            const uint8_t* src = which == 0 ? kv.k_head(l, src_slot, h) : kv.v_head(l, src_slot, h);
            decode_kv_record(src, dim, split, g.record_dtype(which), row.data());
            for (int32_t d = 0; d < dim; ++d) acc[d] += w * row[d];
          }
          const float inv = 1.0f / (w_old + w * bs);
          for (int32_t d = 0; d < dim; ++d) acc[d] *= inv;
          encode_kv_record(acc.data(), dim, split, g.record_dtype(which), dst);
        }
      }
    }
    gk.summary_weight[slot] = w_old + w * bs;
    gk.summary_count[slot] += static_cast<float>(bs);
  }
}

}  // namespace slimkv
