#include "runner/teacher_forced.h"

#include "model/kv_projection.h"
#include "model/summary_merger.h"
#include "runner/batch_builder.h"

namespace slimkv {

TeacherForcedRun::TeacherForcedRun(const Model& model, ThreadPool* pool, const CompressionConfig& cc,
                                   int32_t capacity_tokens, int32_t block_size)
    : fwd_(model, pool), cc_(cc), block_size_(block_size), layout_(fwd_.kv_layout(block_size, cc)),
      kv_(layout_, (capacity_tokens + block_size - 1) / block_size + 1),
      mgr_(kv_.num_blocks(), block_size, /*enable_prefix_caching=*/false, 0) {
  fwd_.set_kv_projection(load_kv_projection(cc, model, layout_));
  fwd_.set_attention_window(cc.sink_tokens(), cc.window_tokens());
  mgr_.set_retention(cc.sink_tokens(), cc.window_tokens());
  if (cc.dynamic()) mgr_.set_dynamic_retention(cc.kv_sink_tokens, cc.kv_recent_window, cc.kv_sparse_topk);
  if (cc.merge()) {
    mgr_.set_evict_hook([this](SeqKv& seq, const std::vector<KvCacheManager::Evicted>& ev) {
      merge_into_summaries(kv_, mgr_, seq, ev);
    });
  }
}

void TeacherForcedRun::step(int32_t token, float* logits) {
  tokens_.push_back(token);
  const int32_t n = num_tokens();
  SLIMKV_CHECK(mgr_.allocate_slots(seq_, n), "teacher-forced run: KV capacity exceeded at {} tokens", n);
  SchedOutput out;
  ScheduledChunk c;
  c.start_pos = n - 1;
  c.token_ids = std::span<const int32_t>(tokens_).subspan(n - 1, 1);
  c.block_table = seq_.blocks;
  c.samples = true;
  c.num_prompt_tokens = 1;  // everything after BOS is decode: retention acts from the start
  c.summary_block = seq_.summary_block;
  c.summary_count = seq_.summary_count;
  out.chunks.push_back(c);
  const int32_t track = cc_.dynamic() ? cc_.kv_recent_window : 0;
  build_forward_batch(out, block_size_, batch_, track);
  fwd_.forward(batch_, kv_, logits);
  if (track > 0) {
    const auto& imp = fwd_.page_importance();
    for (size_t e = 0; e < imp.size(); ++e) {
      const int32_t logical = batch_.attn.kv_page_logical[e];
      if (logical < 0) continue;  // the summary page
      if (static_cast<int32_t>(seq_.importance.size()) <= logical) seq_.importance.resize(logical + 1, 0.0f);
      seq_.importance[logical] += imp[e];
    }
  }
  mgr_.cache_full_blocks(seq_, tokens_, n);
  mgr_.evict_least_attended(seq_, n, 1);
}

}  // namespace slimkv
