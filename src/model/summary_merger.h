// Merge policy of dynamic retention: evicted blocks are folded into the sequence's summary block instead of being
// dropped. Each summary row (one per block slot) holds, per layer and KV head, the importance-weighted average of
// the keys and of the values it absorbed, in the stored basis (rotation and projection are linear), and attention
// adds log(count) to its score so it weighs like the tokens it stands for.
// Must not know: requests or scheduling.
#pragma once
#include <vector>

#include "kv/kv_cache_manager.h"
#include "kv/kv_storage.h"
#include "model/forward_batch.h"

namespace slimkv {

// Folds the evicted blocks of `group` into that group's summary block (its layers only); each fold made is also
// appended to `record` when given (tensor parallelism: the other ranks replay them).
void merge_into_summaries(KvStorage& kv, KvCacheManager& mgr, SeqKv& seq, int32_t group,
                          const std::vector<KvCacheManager::Evicted>& evicted,
                          std::vector<SummaryFold>* record = nullptr);
// Rewrites the KV of one fold (what merge_into_summaries does per evicted block, without the bookkeeping).
void apply_summary_fold(KvStorage& kv, const SummaryFold& fold);

}  // namespace slimkv
