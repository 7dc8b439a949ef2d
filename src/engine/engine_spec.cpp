// Engine's speculative decoding (issue SD): before a step, each running request that may speculate gets its drafts
// (sampling/ngram_proposer.h or engine/draft_proposer.h) as a verify chunk — the scheduler schedules the last token
// and the drafts together; after the forward, the chunk's rows are verified (sampling/speculative_verify.h) into the
// accepted drafts and the token after them — sampled row by row by the request's own sampler, so greedy or sampled
// (temperature, top-k, top-p, min-p), the tokens are plain decoding's exactly, draw for draw. Every KV kind rolls
// back: tables paged by position (full attention, windows, compressed streams' entries and state) rewrite a rejected
// draft's rows later and windows free by the accepted count; a recurrent state keeps the state after each row in a
// spare block (the accepted row's goes live); dynamic retention counts only the accepted rows' attention, and a
// chunk never spans one of its eviction points. Also the pool sizing speculation needs (the draft model's share of
// the budget, recurrent draft states). Under tensor parallelism rank 0 proposes and verifies; the other
// ranks run the verify chunks' forwards like any batch (its query-by-query flags and draft-state blocks travel in
// it; each rank keeps its heads' rows' importance, summed over the ranks).
#include <algorithm>

#include "core/check.h"
#include "engine/draft_proposer.h"
#include "engine/engine.h"
#include "runner/batch_builder.h"
#include "sampling/speculative_verify.h"

namespace slimkv {

// A layout whose recurrent-state groups hold room for a verify chunk's draft states (num_speculative_tokens a
// sequence) when speculative decoding is on; others unchanged.
KvLayout Engine::speculative_layout(KvLayout layout, const SpeculativeConfig& spec) {
  if (spec.on()) layout.draft_state_blocks = spec.ngram.num_speculative_tokens;
  return layout;
}

// "method": "draft_model": the draft, loaded before the target's pool is sized (it takes its share of an explicit
// --kv-cache-memory). Every KV kind speculates; under tensor parallelism only rank 0 proposes (the others run its
// batches), so only rank 0 loads it.
std::unique_ptr<DraftProposer> Engine::make_draft(const Model& model, const EngineConfig& cfg,
                                                  const SpeculativeConfig& spec, const KvLayout& layout) {
  if (!spec.on() || spec.method != "draft_model" || model.shard.rank != 0) return nullptr;
  return std::make_unique<DraftProposer>(spec.draft_model, model, cfg, layout.bytes_per_token());
}

// The target's pools: an explicit --kv-cache-memory less the draft pool's share (said in the error when the rest
// is too small).
std::vector<int32_t> Engine::target_pool_blocks(const EngineConfig& cfg, const KvLayout& layout,
                                                const DraftProposer* draft) {
  KvCacheConfig c = cfg.cache;
  const double share = draft && c.kv_cache_memory_gib > 0 ? draft->kv_cache_memory_gib() : 0.0;
  c.kv_cache_memory_gib -= share;
  try {
    return c.pool_blocks(layout, cfg.sched.max_model_len, cfg.sched.max_num_batched_tokens, cfg.sched.max_num_seqs);
  } catch (const Error& e) {
    if (share <= 0) throw;
    fail("{} (--kv-cache-memory {} GiB less the draft model's pool, {:.1f} MiB: it holds as many tokens as the "
         "target's)", e.what(), cfg.cache.kv_cache_memory_gib, share * 1024);
  }
}

void Engine::plan_drafts() {
  if (!spec_.on()) return;
  const bool now = !spec_.adaptive || spec_governor_.speculate_now();
  std::vector<Request*> who;  // requests that draft this step, and how many tokens each may
  std::vector<int32_t> ks;
  for (Request* r : scheduler_.running()) {
    r->spec_tokens.clear();
    if (!now || !may_speculate(*r)) continue;
    // every emitted token counts against max_tokens and the context: k drafts emit up to k + 1
    const int32_t room = std::min(r->params.max_tokens - r->num_output_tokens(),
                                  cfg_.sched.max_model_len - r->num_tokens()) - 1;
    // dynamic retention: no eviction point between the chunk's rows (each row sees what its decode step would)
    const int32_t k = std::min({spec_.ngram.num_speculative_tokens, room,
                                kv_manager_.rows_before_eviction(r->num_computed_tokens) - 1});
    if (k <= 0) continue;
    who.push_back(r);
    ks.push_back(k);
  }
  std::vector<std::vector<int32_t>> drafts(who.size());
  if (draft_) {  // one batched draft step per token for all of them
    std::vector<std::span<const int32_t>> seqs;
    for (Request* r : who) seqs.emplace_back(r->tokens);
    drafts = draft_->propose(seqs, ks);
  } else {
    for (size_t i = 0; i < who.size(); ++i) {
      NgramProposerConfig c = spec_.ngram;
      c.num_speculative_tokens = ks[i];
      drafts[i] = propose_ngram(who[i]->tokens, c);
    }
  }
  for (size_t i = 0; i < who.size(); ++i) {
    if (drafts[i].empty()) continue;
    Request* r = who[i];
    r->spec_tokens.reserve(drafts[i].size() + 1);
    r->spec_tokens.push_back(r->tokens.back());
    r->spec_tokens.insert(r->spec_tokens.end(), drafts[i].begin(), drafts[i].end());
  }
}

void Engine::verify_chunk(const ScheduledChunk& c, const float* rows, std::vector<int32_t>& sampled,
                          std::vector<int32_t>& accepted) {
  ProfScope ps(ProfKind::SpecVerify, ProfKind::Sampling);  // called inside the step's sampling scope
  const int32_t vocab = model_.config.vocab_size;
  const std::span<const int32_t> drafts = c.token_ids.subspan(1);
  Request* r = scheduler_.find(c.id);
  const SpecVerdict v = verify_drafts(drafts, std::span<const float>(rows, (drafts.size() + 1) * vocab), vocab,
                                      r->sampler);  // plain decoding's draws, row by row
  sampled.insert(sampled.end(), drafts.begin(), drafts.begin() + v.num_accepted);
  sampled.push_back(v.next_token);
  accepted.push_back(v.num_accepted);
  metrics_.spec_drafts += 1;
  metrics_.spec_draft_tokens += static_cast<int64_t>(drafts.size());
  metrics_.spec_accepted_tokens += v.num_accepted;
  for (int32_t i = 0; i < v.num_accepted && i < static_cast<int32_t>(metrics_.spec_accepted_per_pos.size()); ++i) {
    ++metrics_.spec_accepted_per_pos[i];
  }
}

void Engine::add_verified_importance(RequestId id, size_t chunk, int32_t first_token, int32_t rows) {
  Request* r = scheduler_.find(id);
  for (int32_t g = 0; g < layout_.num_groups(); ++g) {  // dynamic retention: the accepted rows' mass, row by row
    if (!layout_.groups[g].spec.dynamic()) continue;
    ProfScope ps(ProfKind::SparseScoring, ProfKind::Sampling);  // called inside the sampling scope
    for (int32_t j = 0; j < rows; ++j) {
      const double* row = fwd_.row_importance(g, first_token + j);
      SLIMKV_CHECK(row != nullptr, "speculative step: a verify row without its importance");
      accumulate_row_importance(batch_, g, row, chunk, r->kv.groups[g]);
    }
  }
}

}  // namespace slimkv
