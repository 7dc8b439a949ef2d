#include "engine/draft_proposer.h"

#include <map>
#include <variant>

#include "core/check.h"
#include "core/profiler.h"
#include "engine/engine.h"
#include "model/kv_projection.h"
#include "model/model.h"

namespace slimkv {

DraftProposer::DraftProposer(const std::string& path, const Model& target, const EngineConfig& target_cfg,
                             int64_t target_bytes_per_token) {
  ModelLoadOptions o;
  o.model_path = path;
  model_ = load_model(o);
  SLIMKV_CHECK(model_->config.vocab_size == target.config.vocab_size,
               "--speculative-config: the draft model {} has a vocabulary of {} tokens, the target {} (they must "
               "share one)", path, model_->config.vocab_size, target.config.vocab_size);
  if (model_->tokenizer && target.tokenizer) {  // same ids for the same pieces, where both files name them
    for (int32_t id = 0; id < target.config.vocab_size; ++id) {
      SLIMKV_CHECK(model_->tokenizer->token_text(id) == target.tokenizer->token_text(id),
                   "--speculative-config: the draft model {} and the target differ at token {} (\"{}\" vs \"{}\")",
                   path, id, model_->tokenizer->token_text(id), target.tokenizer->token_text(id));
    }
  }
  EngineConfig c;
  c.threads = 1;  // beside the target's pool on the same cores: the draft is small
  c.cache.block_size = target_cfg.cache.block_size;
  c.cache.enable_prefix_caching = true;  // a proposal's prompt hits the blocks the last one computed
  const int32_t target_len = target_cfg.sched.max_model_len;
  max_model_len_ = std::min(target_len, model_->config.max_seq_len > 0 ? model_->config.max_seq_len : target_len);
  c.sched.max_model_len = max_model_len_;
  // As many sequences and tokens a step as the target's; the pool holds at most that many full sequences
  // (KvCacheConfig's cap), sized by the draft's own (smaller) bytes per token.
  c.sched.max_num_seqs = target_cfg.sched.max_num_seqs;
  c.sched.max_num_batched_tokens = target_cfg.sched.max_num_batched_tokens;
  if (target_cfg.cache.kv_cache_memory_gib > 0) {  // one budget for both pools, the same tokens in each
    const int64_t draft_bytes = model_kv_layout(*model_, c.cache.block_size, CompressionConfig{}).bytes_per_token();
    kv_gib_ = target_cfg.cache.kv_cache_memory_gib * static_cast<double>(draft_bytes) /
              static_cast<double>(draft_bytes + std::max<int64_t>(1, target_bytes_per_token));
    c.cache.kv_cache_memory_gib = kv_gib_;
  }
  try {
    engine_ = std::make_unique<Engine>(*model_, c);
  } catch (const Error& e) {
    fail("--speculative-config: the draft model {}: {}{}", path, e.what(),
         kv_gib_ > 0 ? " (its pool's share of --kv-cache-memory holds as many tokens as the target's)" : "");
  }
}

DraftProposer::~DraftProposer() = default;

std::vector<std::vector<int32_t>> DraftProposer::propose(const std::vector<std::span<const int32_t>>& seqs,
                                                         const std::vector<int32_t>& ks) {
  std::vector<std::vector<int32_t>> out(seqs.size());
  std::map<RequestId, size_t> index;
  RequestParams p;
  p.ignore_eos = true;  // an EOS is a draft like any token: the target decides
  p.speculative = false;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (ks[i] <= 0 || seqs[i].empty() || static_cast<int64_t>(seqs[i].size()) + ks[i] > max_model_len_) continue;
    p.max_tokens = ks[i];
    auto id = engine_->add_request(std::vector<int32_t>(seqs[i].begin(), seqs[i].end()), p);
    if (const RequestId* rid = std::get_if<RequestId>(&id)) index[*rid] = i;
  }
  // The draft's steps count as proposing (the caller's scope), not as the target's matmul, attention, phase, ...
  Profiler* prof = Profiler::active();
  Profiler::install(nullptr);
  struct Reinstall {
    Profiler* p;
    ~Reinstall() { Profiler::install(p); }
  } reinstall{prof};
  try {
    while (engine_->has_unfinished()) {
      ++steps_;
      for (const StepEvent& ev : engine_->step()) {
        if (ev.token >= 0) out[index.at(ev.id)].push_back(ev.token);
      }
    }
  } catch (...) {  // leave the draft engine empty for the next proposal
    for (const auto& [id, i] : index) engine_->abort(id, FinishReason::Abort);
    engine_->take_finished();
    throw;
  }
  engine_->take_finished();  // the proposals are done with: nothing of them is kept
  engine_->clear_metric_samples();
  return out;
}

}  // namespace slimkv
