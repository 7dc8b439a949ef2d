#include "sched/scheduler.h"

#include <algorithm>

#include "core/profiler.h"

namespace slimkv {

Scheduler::Scheduler(const SchedulerConfig& cfg, KvCacheManager& kv) : cfg_(cfg), kv_(kv) { cfg_.validate(); }

std::variant<RequestId, std::string> Scheduler::add(std::vector<int32_t> prompt, const RequestParams& params,
                                                    double now_ms) {
  auto reject = [&](std::string why) {
    ++counters_.num_rejected;
    return std::variant<RequestId, std::string>(std::move(why));
  };
  if (prompt.empty()) return reject("the prompt is empty");
  if (static_cast<int64_t>(prompt.size()) >= cfg_.max_model_len) {
    return reject(fmt::format("the prompt has {} tokens but the maximum model length is {} tokens", prompt.size(),
                              cfg_.max_model_len));
  }
  if (params.max_tokens < 1) return reject(fmt::format("max_tokens must be >= 1 (got {})", params.max_tokens));
  if (params.min_tokens < 0) return reject(fmt::format("min_tokens must be >= 0 (got {})", params.min_tokens));
  if (params.logprobs < -1) return reject(fmt::format("logprobs must be >= 0 (got {})", params.logprobs));
  if (static_cast<int32_t>(waiting_.size()) >= cfg_.max_waiting) {
    return reject(fmt::format("the waiting queue is full ({} requests)", cfg_.max_waiting));
  }
  try {
    params.sampling.validate();
  } catch (const Error& e) {
    return reject(e.what());
  }
  RequestId id = next_id_++;
  auto r = std::make_unique<Request>(id, std::move(prompt), params, now_ms);
  counters_.prompt_tokens += r->num_prompt_tokens;
  waiting_.push_back(r.get());
  requests_.emplace(id, std::move(r));
  return id;
}

Request* Scheduler::find(RequestId id) {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

ScheduledChunk Scheduler::make_chunk(Request* r, int32_t n, bool speculative) const {
  ScheduledChunk c;
  c.id = r->id;
  c.start_pos = r->num_computed_tokens;
  // a verify chunk: the last token, then the drafts (in their own buffer), verified in one forward
  c.token_ids = speculative ? std::span<const int32_t>(r->spec_tokens)
                            : std::span<const int32_t>(r->tokens).subspan(c.start_pos, n);
  c.num_drafts = speculative ? r->num_drafts() : 0;
  c.groups = std::span<const GroupKv>(r->kv.groups);
  c.samples = speculative || c.start_pos + n == r->num_tokens();
  c.num_prompt_tokens = r->num_prompt_tokens;
  return c;
}

int32_t Scheduler::state_snapshot_tokens(const Request& r) const {
  return (r.num_prompt_tokens - 1) / kv_.block_size() * kv_.block_size();
}

void Scheduler::preempt(Request* r) {
  kv_.free(r->kv);
  r->spec_tokens.clear();
  r->num_computed_tokens = 0;
  ++r->num_preemptions;
  ++counters_.num_preemptions;
  running_.erase(std::find(running_.begin(), running_.end(), r));
  waiting_.push_front(r);
}

SchedOutput Scheduler::schedule(double now_ms) {
  SchedOutput out;
  int32_t budget = cfg_.max_num_batched_tokens;
  // 1. Running requests, oldest first (decodes are 1 token each, so they go ahead of long prefills).
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Request* r = running_[i];
    const int32_t n = std::min({r->num_tokens() - r->num_computed_tokens, budget,
                                kv_.prefill_chunk_limit(r->num_computed_tokens, r->num_prompt_tokens)});
    if (n <= 0) continue;
    if (!r->spec_tokens.empty()) {  // drafts only where the step has the tokens and the pool the slots, else plain
      const int32_t ns = static_cast<int32_t>(r->spec_tokens.size());
      // a recurrent state also keeps the state after each row but the last (the accepted row's goes live)
      if (n == 1 && ns <= budget && kv_.allocate_draft_states(r->kv, ns - 1)) {
        if (kv_.allocate_slots(r->kv, r->num_computed_tokens + ns)) {
          out.chunks.push_back(make_chunk(r, ns, true));
          budget -= ns;
          continue;
        }
        kv_.settle_draft_states(r->kv, ns - 1, r->num_computed_tokens);  // lets the spares go, the state as it was
      }
      r->spec_tokens.clear();
    }
    bool ok = false;
    while (!(ok = kv_.allocate_slots(r->kv, r->num_computed_tokens + n, nullptr, 0, state_snapshot_tokens(*r)))) {
      Request* victim = running_.back();  // the most recently admitted
      preempt(victim);
      ++out.num_preempted;
      if (victim == r) break;
    }
    if (!ok) break;  // r itself was preempted: it is the last running request
    out.chunks.push_back(make_chunk(r, n, false));
    budget -= n;
  }
  // 2. Admit waiting requests (not in a step that had to preempt: memory is short).
  while (out.num_preempted == 0 && !waiting_.empty() && budget > 0 &&
         static_cast<int32_t>(running_.size()) < cfg_.max_num_seqs) {
    Request* r = waiting_.front();
    const bool hit_ok = !pooling_reads_prefix(r->params.pooling);  // mean / cls pooling need every position
    PrefixHit hit = hit_ok ? kv_.find_cached_prefix(r->tokens, r->kv.hash_seed) : PrefixHit{};
    const int32_t n = std::min({r->num_tokens() - hit.num_tokens, budget,
                                kv_.prefill_chunk_limit(hit.num_tokens, r->num_prompt_tokens)});
    if (!kv_.allocate_slots(r->kv, hit.num_tokens + n, &hit, 0, state_snapshot_tokens(*r))) break;
    r->num_computed_tokens = hit.num_tokens;
    if (r->num_cached_tokens < 0) r->num_cached_tokens = hit.num_tokens;
    if (r->times.first_scheduled_ms < 0) r->times.first_scheduled_ms = now_ms;
    waiting_.pop_front();
    running_.push_back(r);
    out.chunks.push_back(make_chunk(r, n, false));
    budget -= n;
  }
  for (const auto& c : out.chunks) out.num_tokens += static_cast<int32_t>(c.token_ids.size());
  return out;
}

void Scheduler::finish(Request* r, FinishReason why, double now_ms) {
  kv_.free(r->kv);
  r->finish = why;
  r->times.finished_ms = now_ms;
  auto it = std::find(running_.begin(), running_.end(), r);
  if (it != running_.end()) running_.erase(it);
  auto wt = std::find(waiting_.begin(), waiting_.end(), r);
  if (wt != waiting_.end()) waiting_.erase(wt);
  if (why == FinishReason::Abort) ++counters_.num_aborted;
  else ++counters_.num_finished;
  auto node = requests_.find(r->id);
  finished_.push_back(std::move(node->second));
  requests_.erase(node);
}

std::vector<StepEvent> Scheduler::update(const SchedOutput& out, const std::vector<int32_t>& sampled,
                                        const std::vector<int32_t>& accepted, double now_ms) {
  std::vector<StepEvent> events;
  size_t next_sample = 0, next_verdict = 0;
  for (const auto& c : out.chunks) {
    Request* r = find(c.id);
    SLIMKV_CHECK(r != nullptr, "update: request {} vanished during the step", c.id);
    int32_t emitted = 1;  // tokens this chunk gives (a verify chunk: its accepted drafts and the token after them)
    if (c.num_drafts > 0) {
      SLIMKV_CHECK(next_verdict < accepted.size(), "update: a verify chunk without its verdict");
      const int32_t kept = accepted[next_verdict++];
      r->num_computed_tokens += 1 + kept;  // the rejected drafts' rows are rewritten before they are ever read
      kv_.settle_draft_states(r->kv, kept, r->num_computed_tokens);  // a recurrent state: the accepted row's
      emitted = kept + 1;
      r->spec_tokens.clear();
    } else {
      r->num_computed_tokens += static_cast<int32_t>(c.token_ids.size());
    }
    kv_.cache_full_blocks(r->kv, r->tokens, r->num_computed_tokens);
    {
      ProfScope ps(ProfKind::SparseSelection);
      kv_.evict_least_attended(r->kv, r->num_computed_tokens, r->num_prompt_tokens);
    }
    if (!c.samples) continue;
    SLIMKV_CHECK(next_sample + emitted <= sampled.size(), "update: fewer sampled tokens than sampling chunks");
    if (r->times.first_token_ms < 0) {
      r->times.first_token_ms = now_ms;
      r->times.prefill_ms = now_ms - r->times.first_scheduled_ms;
    }
    r->times.last_token_ms = now_ms;
    const size_t first = next_sample;
    next_sample += emitted;
    for (size_t i = first; i < next_sample; ++i) {  // each token as if sampled alone: a finish ends the rest
      if (append_sampled(r, sampled[i], now_ms, events)) break;
    }
  }
  return events;
}

bool Scheduler::append_sampled(Request* r, int32_t tok, double now_ms, std::vector<StepEvent>& events) {
  const auto& stops = r->params.stop_token_ids;
  if ((!r->params.ignore_eos && tok == r->params.eos_id) || std::find(stops.begin(), stops.end(), tok) != stops.end()) {
    events.push_back({r->id, -1, FinishReason::Stop, 0.0f, {}});
    finish(r, FinishReason::Stop, now_ms);
    return true;
  }
  r->tokens.push_back(tok);
  ++counters_.generated_tokens;
  FinishReason why = FinishReason::None;
  if (r->num_output_tokens() >= r->params.max_tokens || r->num_tokens() >= cfg_.max_model_len) {
    why = FinishReason::Length;
  }
  events.push_back({r->id, tok, why, 0.0f, {}});
  if (why != FinishReason::None) finish(r, why, now_ms);
  return why != FinishReason::None;
}

bool Scheduler::admit_prefilled(RequestId id, int32_t num_tokens, double now_ms) {
  Request* r = find(id);
  SLIMKV_CHECK(r != nullptr && r->num_computed_tokens == 0 && num_tokens >= 0 && num_tokens < r->num_tokens(),
               "admit_prefilled: request {} must be waiting with more than {} tokens", id, num_tokens);
  auto it = std::find(waiting_.begin(), waiting_.end(), r);
  SLIMKV_CHECK(it != waiting_.end(), "admit_prefilled: request {} is not waiting", id);
  if (static_cast<int32_t>(running_.size()) >= cfg_.max_num_seqs) return false;
  // the next query is at num_tokens: windowed groups get no blocks wholly behind its window
  if (!kv_.allocate_slots(r->kv, num_tokens, nullptr, num_tokens)) return false;
  r->num_computed_tokens = num_tokens;
  r->num_cached_tokens = 0;
  r->times.first_scheduled_ms = now_ms;
  waiting_.erase(it);
  running_.push_back(r);
  return true;
}

bool Scheduler::abort(RequestId id, double now_ms, FinishReason why) {
  Request* r = find(id);
  if (r == nullptr) return false;
  finish(r, why, now_ms);
  return true;
}

std::vector<std::unique_ptr<Request>> Scheduler::take_finished() {
  std::vector<std::unique_ptr<Request>> out;
  out.swap(finished_);
  return out;
}

}  // namespace slimkv
