// Engine's speculative decoding (issue SD): before a step, each running request that may speculate gets its drafts
// (sampling/ngram_proposer.h, engine/draft_proposer.h, or the model's MTP head: engine/mtp_proposer.h, which is handed
// every step's hidden states whose next token became known) as a verify chunk — the scheduler schedules the last token
// and the drafts together; after the forward, the chunk's rows are verified (sampling/speculative_verify.h) into the
// accepted drafts and the token after them — sampled row by row by the request's own sampler, so greedy or sampled
// (temperature, top-k, top-p, min-p), the tokens are plain decoding's exactly, draw for draw. Every KV kind rolls back:
// tables paged by position (full attention, windows, compressed streams' entries and state) rewrite a rejected draft's
// rows later and windows free by the accepted count; a recurrent state keeps the state after each row in a spare block
// (the accepted row's goes live); dynamic retention counts only the accepted rows' attention, and a chunk never spans
// one of its eviction points. Also the pool sizing speculation needs (the draft model's share of the budget, recurrent
// draft states). Under tensor parallelism rank 0 proposes and verifies; the other ranks run the verify chunks' forwards
// like any batch (its query-by-query flags and draft-state blocks travel in it; each rank keeps its heads' rows'
// importance, summed over the ranks).
#include <algorithm>

#include "core/check.h"
#include "engine/draft_proposer.h"
#include "engine/engine.h"
#include "engine/mtp_proposer.h"
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

// "method": "mtp": the model's own MTP head drafts (rank 0 of one process only: the head is not split). Its pool
// holds as many tokens as the target's first pool (at most max_num_seqs full sequences, at least one).
std::unique_ptr<MtpProposer> Engine::make_mtp(const Model& model, const EngineConfig& cfg, int64_t target_tokens,
                                              ThreadPool* pool) {
  SLIMKV_CHECK(model.config.num_mtp_layers > 0, "--speculative-config: method \"mtp\" needs a model with an MTP "
               "head (nextn_predict_layers); {} has none", model.path);
  const int64_t tokens = std::min<int64_t>(target_tokens, int64_t{cfg.sched.max_num_seqs} * cfg.sched.max_model_len);
  return std::make_unique<MtpProposer>(model, cfg.sched.max_model_len, cfg.cache.block_size, tokens, pool);
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
  // An MTP head is fed only while drafts are on: off, its lanes go (a lane restarts where feeding resumes)
  mtp_feeding_ = mtp_ && now;
  if (mtp_ && !now) mtp_->retain({});
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
  if (mtp_) {  // one batched head step per token for all of them
    std::vector<RequestId> ids, running;
    std::vector<int32_t> last;
    for (Request* r : scheduler_.running()) running.push_back(r->id);
    mtp_->retain(running);  // lanes of finished or preempted requests go
    for (Request* r : who) {
      ids.push_back(r->id);
      last.push_back(r->num_tokens() - 1);
    }
    drafts = mtp_->propose(ids, last, ks);
  } else if (draft_) {  // one batched draft step per token for all of them
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

void Engine::keep_mtp_rows() {
  for (int32_t t = 0; t < batch_.num_tokens(); ++t) batch_.hidden_rows.push_back(t);
}

void Engine::observe_mtp_rows(const SchedOutput& out, const std::vector<int32_t>& accepted, size_t first) {
  const int32_t dim = model_.config.dim;
  size_t row = first;  // the chunk's first hidden row
  size_t verified = 0;  // verify chunks so far
  for (const ScheduledChunk& c : out.chunks) {
    const int32_t n = static_cast<int32_t>(c.token_ids.size());
    // a verify chunk's rows up to the last accepted draft saw only accepted tokens; each row's next token is known
    // once the step appended it (a finished request's rows are not needed)
    int32_t valid = c.num_drafts > 0 ? 1 + accepted.at(verified++) : n;
    const Request* r = scheduler_.find(c.id);
    if (r) valid = std::min(valid, r->num_tokens() - 1 - c.start_pos);
    if (r && valid > 0 && may_ever_speculate(*r)) {
      const float* h = fwd_.hidden_states().data() + row * static_cast<size_t>(dim);  // [valid, dim]
      mtp_->observe(c.id, c.start_pos, h, std::span<const int32_t>(r->tokens).subspan(c.start_pos + 1, valid));
    }
    row += n;
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
