// Continuous batching with chunked prefill (vLLM v1 style): every step each running request gets
// min(num_tokens - num_computed_tokens, remaining budget) tokens, running ones first, then waiting ones are
// admitted (with prefix-cache hits). When blocks run out the most recently admitted request is preempted
// (recompute: its blocks are freed and it rejoins the front of the queue, its output so far kept).
// Owns: the requests. Talks to KV memory only through KvCacheManager. Must not know: tensors or the model.
#pragma once
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "sched/sched_output.h"
#include "sched/scheduler_config.h"

namespace slimkv {

struct SchedulerCounters {
  int64_t num_preemptions = 0;
  int64_t prompt_tokens = 0;      // of requests accepted
  int64_t generated_tokens = 0;
  int64_t num_finished = 0, num_aborted = 0, num_rejected = 0;
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& cfg, KvCacheManager& kv);

  // Accepts a request or returns the reason it cannot (empty prompt, too long, queue full).
  std::variant<RequestId, std::string> add(std::vector<int32_t> prompt, const RequestParams& params, double now_ms);
  // Removes a waiting or running request and frees its blocks; false when unknown or already finished.
  // Benchmarks (synthetic fill): a waiting request's first num_tokens tokens are declared computed — it gets
  // blocks for them and goes straight to running; the caller writes their K/V. False when blocks or seats lack.
  bool admit_prefilled(RequestId id, int32_t num_tokens, double now_ms);
  // Ends a request between steps (frees its blocks); `why` Stop when its client ended it on a stop string.
  bool abort(RequestId id, double now_ms, FinishReason why = FinishReason::Abort);

  SchedOutput schedule(double now_ms);
  // Applies one step's results: `sampled` has one token per chunk with samples=true, in chunk order.
  // sampled: the tokens of every sampling chunk, in order (a verify chunk: its accepted drafts, then the token after
  // them); accepted: per verify chunk (num_drafts > 0), how many of its drafts were kept.
  std::vector<StepEvent> update(const SchedOutput& out, const std::vector<int32_t>& sampled,
                                const std::vector<int32_t>& accepted, double now_ms);

  Request* find(RequestId id);
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  bool has_unfinished() const { return !waiting_.empty() || !running_.empty(); }
  const std::vector<Request*>& running() const { return running_; }
  const std::deque<Request*>& waiting() const { return waiting_; }
  const SchedulerCounters& counters() const { return counters_; }
  const SchedulerConfig& config() const { return cfg_; }
  // Requests finished since the last call (kept for metrics), then forgotten.
  std::vector<std::unique_ptr<Request>> take_finished();

 private:
  void preempt(Request* r);
  // The prefix whose recurrent state (where the model has one) is kept for the prefix cache: the prompt's full
  // blocks, leaving one token — the longest prefix a later request with the same prompt can hit.
  int32_t state_snapshot_tokens(const Request& r) const;
  void finish(Request* r, FinishReason why, double now_ms);
  ScheduledChunk make_chunk(Request* r, int32_t n, bool speculative) const;
  // One sampled token onto r (or its finish: EOS / a stop token, max_tokens, max_model_len); true when r finished.
  bool append_sampled(Request* r, int32_t tok, double now_ms, std::vector<StepEvent>& events);

  SchedulerConfig cfg_;
  KvCacheManager& kv_;
  RequestId next_id_ = 1;
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;  // admission order: back = most recently admitted
  std::vector<std::unique_ptr<Request>> finished_;
  SchedulerCounters counters_;
};

}  // namespace slimkv
