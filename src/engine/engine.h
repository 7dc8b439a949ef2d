// The inference engine: add_request / step / abort over plain data. One step = schedule -> build batch -> run the
// model on the varlen batch -> sample -> update (append tokens, finish, free blocks) -> metrics.
// Owns: the KV storage, the scheduler, the forward pass and the metrics. Must not know: HTTP or text.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/thread_pool.h"
#include "engine/engine_config.h"
#include "engine/kv_offload.h"
#include "sched/spec_governor.h"
#include "sched/speculative_config.h"
#include "engine/metrics.h"
#include "model/decoder_forward.h"
#include "sampling/logprobs.h"
#include "sched/scheduler.h"

namespace slimkv {

class DraftProposer;  // engine/draft_proposer.h
class MtpProposer;    // engine/mtp_proposer.h

class Engine {
 public:
  Engine(const Model& model, EngineConfig cfg);  // validates cfg against the model; throws Error
  ~Engine();  // with a disk tier: the blocks the pool still caches are saved to it first

  // A request id, or the reason the request was refused.
  std::variant<RequestId, std::string> add_request(std::vector<int32_t> prompt_token_ids, const RequestParams& params);
  // Ends a request between steps, freeing its blocks; Stop (not Abort) when its text ended on a stop string.
  bool abort(RequestId id, FinishReason why = FinishReason::Abort);
  // Benchmarks only: adds a request whose prompt (but its last token) is already in the cache, filled with seeded
  // N(0, scale²) K/V rows written through the layout's encoder — long contexts without hours of prefill. The
  // prefix cache must be off (the rows are not the tokens' real K/V). Returns the id or why it was refused.
  std::variant<RequestId, std::string> add_synthetic_prefilled_request(std::vector<int32_t> prompt,
                                                                       const RequestParams& params, uint64_t seed,
                                                                       float scale = 1.0f);
  // Runs one step; returns the token events of this step (sampled tokens and finishes), in batch order.
  std::vector<StepEvent> step();
  // Tensor parallelism (docs/scale-out.md): rank 0's engine hands each step's batch to `fn` just before its
  // forward (to broadcast it); the other ranks run only the forward of the batches they receive, on their own
  // slice and KV pool (the same block ids: the pools have the same geometry).
  void set_before_forward(std::function<void(const ForwardBatch&)> fn) { before_forward_ = std::move(fn); }
  void forward_only(const ForwardBatch& batch);
  // ... and the disk tier (each rank keeps its own heads' records): rank 0 hands what its tier did to its pools
  // (blocks saved, blocks read back) to `fn` after its restores and before each forward; `fn` returns, per read
  // back, > 0 where another rank could not serve it (those blocks are forgotten). The other ranks apply them.
  using TierSync = std::function<std::vector<double>(const KvTierOps&)>;
  void set_tier_sync(TierSync fn);
  std::vector<double> apply_tier_ops(const KvTierOps& ops);
  // Saves the pool's cached blocks to the tier (and, under tensor parallelism, has every rank save its part):
  // before a server lets its other ranks go. Once; the destructor does it when nobody did.
  void save_tier();
  bool has_unfinished() const { return scheduler_.has_unfinished(); }

  const Metrics& metrics() const { return metrics_; }
  void clear_metric_samples() { metrics_.clear_samples(); }  // after a consumer has taken them
  const EngineConfig& config() const { return cfg_; }
  const KvCacheManager& kv_manager() const { return kv_manager_; }
  int32_t peak_used_blocks() const { return peak_used_blocks_; }
  // The pool bytes of the blocks in use (each pool's block bytes; several pools when record sizes differ), and the
  // most since start.
  int64_t kv_bytes_in_use() const;
  int64_t peak_kv_bytes() const { return peak_kv_bytes_; }
  // Bytes of the records running sequences hold, each group counting only its own layers' records (the pool's
  // block bytes cover every storage tensor: less than that when groups have different record sizes).
  int64_t record_bytes_in_use() const;
  int64_t kv_bytes() const { return storage_.size_bytes(); }
  const KvLayout& kv_layout() const { return layout_; }
  // Tests and tools: the cache's storage, and an unfinished request's KV bookkeeping (its block tables per group,
  // tokens computed), or null.
  const KvStorage& storage() const { return storage_; }
  // What attention has read since start (rows read and visible per query token and KV head, a select index's rows).
  const PagedAttention::ReadStats& read_stats() const { return fwd_.read_stats(); }
  const Request* find_request(RequestId id) { return scheduler_.find(id); }
  // Requests that finished since the last call (their tokens and timings), then forgotten by the engine.
  std::vector<std::unique_ptr<Request>> take_finished();
  void check_integrity() const { kv_manager_.check_integrity(); }
  // The disk tier (--kv-offload-dir), or null.
  const KvOffload* offload() const { return offload_.get(); }
  KvOffload* offload() { return offload_.get(); }

 private:
  double now_ms() const;
  void refresh_gauges();
  // The disk tier (engine_tier.cpp):
  void open_tier();              // when --kv-offload-dir is given
  void restore_for_admission();  // before a step: the waiting requests' blocks back from the tier, the next read ahead
  void sync_tier();  // rank 0 under tensor parallelism: the tier's ops since the last sync to the other ranks
  // Speculative decoding (engine_spec.cpp):
  void plan_drafts();  // before a step: drafts for the running requests that may speculate
  void verify_chunk(const ScheduledChunk& c, const float* rows, std::vector<int32_t>& sampled,
                    std::vector<int32_t>& accepted);  // after the forward: a verify chunk's tokens
  // "method": "mtp": each chunk's rows' hidden states kept by the forward (appended to batch_.hidden_rows), and
  // after the step the rows whose next token is known handed to the MTP head (first: the first such hidden row).
  void keep_mtp_rows();
  void observe_mtp_rows(const SchedOutput& out, const std::vector<int32_t>& accepted, size_t first);
  // Dynamic retention: the attention mass of a verify chunk's first `rows` (accepted) rows, row by row.
  void add_verified_importance(RequestId id, size_t chunk, int32_t first_token, int32_t rows);
  // Before the pools are sized (constructor): the layout with room for recurrent draft states, the draft model,
  // and the target's pools less the draft's share of the budget.
  static KvLayout speculative_layout(KvLayout layout, const SpeculativeConfig& spec);
  static std::unique_ptr<DraftProposer> make_draft(const Model& model, const EngineConfig& cfg,
                                                   const SpeculativeConfig& spec, const KvLayout& layout);
  static std::unique_ptr<MtpProposer> make_mtp(const Model& model, const EngineConfig& cfg, int64_t target_tokens,
                                               ThreadPool* pool);
  static std::vector<int32_t> target_pool_blocks(const EngineConfig& cfg, const KvLayout& layout,
                                                 const DraftProposer* draft);

  const Model& model_;
  EngineConfig cfg_;
  ThreadPool pool_;
  DecoderForward fwd_;
  SpeculativeConfig spec_;  // --speculative-config, parsed once (before the layout: it sizes the pools)
  KvLayout layout_;
  std::unique_ptr<DraftProposer> draft_;  // "method": "draft_model" (engine/draft_proposer.h); before storage_: its
                                          // pool's share of --kv-cache-memory leaves the target's
  KvStorage storage_;
  std::unique_ptr<MtpProposer> mtp_;  // "method": "mtp" (engine/mtp_proposer.h)
  bool mtp_feeding_ = false;          // this step feeds the head (drafts on: plan_drafts decides)
  KvCacheManager kv_manager_;
  Scheduler scheduler_;
  Metrics metrics_;
  ForwardBatch batch_;
  std::vector<float> logits_;  // [max_num_seqs, vocab]
  std::vector<TokenLogprobs> step_logprobs_;  // [sampled tokens of a step], reused
  std::vector<std::unique_ptr<Request>> finished_;
  int64_t vocab_rejected_ = 0;
  int32_t peak_used_blocks_ = 0;
  int64_t peak_kv_bytes_ = 0;
  std::function<void(const ForwardBatch&)> before_forward_;
  std::vector<SummaryFold> pending_folds_;  // a tensor-parallel leader's merges since the last step
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  std::unique_ptr<KvOffload> offload_;  // after kv_manager_ and storage_, which it hooks into
  TierSync tier_sync_;
  bool tier_saved_ = false;
  SpecGovernor spec_governor_;  // adaptive: drafts only while they measure faster
};

}  // namespace slimkv
