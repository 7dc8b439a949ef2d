#include "engine/engine.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/profiler.h"
#include "engine/draft_proposer.h"
#include "engine/embedding_pool.h"
#include "engine/mtp_proposer.h"
#include "engine/step_adapters.h"
#include "model/kv_projection.h"
#include "model/summary_merger.h"
#include "runner/batch_builder.h"
#include "sampling/logprobs.h"
#include "sampling/penalties.h"

namespace slimkv {
namespace {

EngineConfig resolved(const Model& model, EngineConfig cfg) {
  if (cfg.sched.max_model_len == 0) cfg.sched.max_model_len = model.config.max_seq_len;
  SLIMKV_CHECK(cfg.sched.max_model_len <= model.config.max_seq_len,
               "--max-model-len {} exceeds the model's context of {} tokens", cfg.sched.max_model_len,
               model.config.max_seq_len);
  cfg.sched.validate();
  cfg.cache.validate();
  parse_mla_attention(cfg.mla_attention);
  if (!cfg.kv_config_file.empty()) cfg.compress = CompressionConfig::from_json_file(cfg.kv_config_file);
  cfg.compress.validate(kv_layer_specs(model.config));
  return cfg;
}

uint64_t cache_salt(const Model& m, const CompressionConfig& cc) {  // everything that changes the stored bytes
  const ModelConfig& c = m.config;
  uint64_t h = 1469598103934665603ull;
  for (char ch : m.path + c.summary() + cc.fingerprint()) h = (h ^ static_cast<uint8_t>(ch)) * 1099511628211ull;
  return h;
}

// How many of a request's top logits its next sample reads: 1 greedy, top_k when sampling with a small top-k
// (top-p and min-p then act inside it), 0 (the whole row) when anything reads the rest — penalties, logit bias,
// a grammar, logprobs, a masked EOS before min_tokens, or no top-k.
constexpr int32_t kMaxLogitsCandidates = 64;
int32_t logits_candidates(const Request& r) {
  const RequestParams& p = r.params;
  if (p.sampling.has_penalties() || r.constraint || p.logprobs >= 0 || r.num_output_tokens() < p.min_tokens) return 0;
  if (p.sampling.temperature == 0.0f) return 1;
  return p.sampling.top_k > 0 && p.sampling.top_k <= kMaxLogitsCandidates ? p.sampling.top_k : 0;
}

}  // namespace

Engine::Engine(const Model& model, EngineConfig cfg)
    : model_(model),
      cfg_(resolved(model, std::move(cfg))),
      pool_(cfg_.threads > 0 ? cfg_.threads : default_num_threads()),
      fwd_(model, &pool_),
      spec_(SpeculativeConfig::from_json(cfg_.speculative_config)),
      layout_(speculative_layout(fwd_.kv_layout(cfg_.cache.block_size, cfg_.compress), spec_)),
      draft_(make_draft(model, cfg_, spec_, layout_)),
      storage_(layout_, target_pool_blocks(cfg_, layout_, draft_.get())),
      mtp_(spec_.method == "mtp" && model.shard.rank == 0
               ? make_mtp(model, cfg_, int64_t{storage_.num_blocks(0)} * cfg_.cache.block_size, &pool_)
               : nullptr),
      kv_manager_(storage_.pool_blocks(), cfg_.cache.block_size, cfg_.cache.enable_prefix_caching,
                  cache_salt(model, cfg_.compress), group_specs(layout_)),
      scheduler_(cfg_.sched, kv_manager_) {
  fwd_.set_kv_projection(load_kv_projection(cfg_.compress, model, layout_));
  fwd_.block_options().mla_attention = parse_mla_attention(cfg_.mla_attention);
  // --kv-sparse-topk on a natively compressed model overrides its indexer's top-k (the seed's kv_sparse_topk);
  // blocks without an indexer ignore it.
  if (cfg_.compress.enabled) fwd_.block_options().index_topk = cfg_.compress.kv_sparse_topk;
  kv_manager_.set_evict_hook([this](SeqKv& seq, int32_t g, const std::vector<KvCacheManager::Evicted>& ev) {
    // A tensor-parallel leader records each fold for the other ranks (sent with the next step's batch).
    merge_into_summaries(storage_, kv_manager_, seq, g, ev, before_forward_ ? &pending_folds_ : nullptr);
  });
  fwd_.reserve(cfg_.sched.max_num_batched_tokens, std::min(cfg_.sched.max_num_seqs, cfg_.sched.max_num_batched_tokens));
  logits_.resize(static_cast<size_t>(std::min(cfg_.sched.max_num_seqs, cfg_.sched.max_num_batched_tokens)) *
                 model.config.vocab_size);
  open_tier();
  refresh_gauges();
}

Engine::~Engine() {
  if (!offload_ || tier_saved_) return;
  if (tier_sync_) {  // the other ranks may be gone: their parts would not be saved alongside
    std::fprintf(stderr, "slimkv: KV disk tier: the cached blocks were not saved (save_tier was not called)\n");
    return;
  }
  try {
    save_tier();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "slimkv: KV disk tier: saving the cached blocks failed: %s\n", e.what());
  }
}

double Engine::now_ms() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
}

std::variant<RequestId, std::string> Engine::add_request(std::vector<int32_t> prompt, const RequestParams& params) {
  for (int32_t t : params.stop_token_ids) {
    if (t < 0 || t >= model_.config.vocab_size) {
      return fmt::format("stop token id {} is outside the vocabulary (0..{})", t, model_.config.vocab_size - 1);
    }
  }
  for (const auto& [t, bias] : params.sampling.logit_bias) {
    if (t < 0 || t >= model_.config.vocab_size) {
      return fmt::format("logit bias token id {} is outside the vocabulary (0..{})", t, model_.config.vocab_size - 1);
    }
  }
  for (int32_t t : prompt) {
    if (t < 0 || t >= model_.config.vocab_size) {
      ++vocab_rejected_;
      refresh_gauges();
      return fmt::format("token id {} is outside the vocabulary (0..{})", t, model_.config.vocab_size - 1);
    }
  }
  RequestParams p = params;  // the prefix-cache root follows the adapter, whatever the caller set
  p.lora_id = p.lora ? p.lora->fingerprint : 0;
  auto r = scheduler_.add(std::move(prompt), p, now_ms());
  refresh_gauges();
  return r;
}

std::variant<RequestId, std::string> Engine::add_synthetic_prefilled_request(std::vector<int32_t> prompt,
                                                                             const RequestParams& params,
                                                                             uint64_t seed, float scale) {
  SLIMKV_CHECK(!cfg_.cache.enable_prefix_caching, "synthetic fill needs the prefix cache off");
  const int32_t n = static_cast<int32_t>(prompt.size()) - 1;
  auto r = add_request(std::move(prompt), params);
  if (std::holds_alternative<std::string>(r)) return r;
  const RequestId id = std::get<RequestId>(r);
  if (!scheduler_.admit_prefilled(id, n, now_ms())) {
    scheduler_.abort(id, now_ms());
    return std::string("no room: not enough free KV blocks or running seats for the synthetic prompt");
  }
  const SeqKv& kv = scheduler_.find(id)->kv;
  const int32_t bs = cfg_.cache.block_size;
  int32_t kv_dim = 0;  // the widest record of any stream (a layer's, or one of DeepSeek-V4's several per layer)
  for (const KvLayerGeometry& g : layout_.layers) {
    if (!g.spec.recurrent_state()) kv_dim = std::max(kv_dim, g.num_kv_heads * std::max(g.head_dim_k, g.head_dim_v));
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> k(kv_dim), v(kv_dim);  // [kv_dim] one token's (or entry's) rows
  for (int32_t p = 0; p < n; ++p) {
    for (int32_t l = 0; l < layout_.num_layers(); ++l) {
      if (layout_.layers[l].appended()) continue;  // written with its layer's rows below
      const KvGroupSpec& spec = layout_.groups[layout_.layers[l].group].spec;
      if (spec.recurrent_state()) {  // a recurrent state is not a row per token: it starts from zeros
        if (p == 0) {
          const BlockId block = kv.groups[layout_.layers[l].group].blocks[0];
          std::memset(storage_.k_head(l, static_cast<int64_t>(block) * bs, 0), 0, layout_.layers[l].k_row_bytes() * bs);
        }
        continue;
      }
      // a compressed stream holds entry (p + 1) / ratio - 1 once token p completes it
      if (spec.compressed() && (p + 1) % spec.entry_tokens != 0) continue;
      const int64_t index = spec.compressed() ? (p + 1) / spec.entry_tokens - 1 : p;
      const BlockId block = kv.groups[layout_.layers[l].group].blocks[index / bs];
      if (block < 0) continue;  // freed behind a window
      for (auto& x : k) x = normal(rng);
      for (auto& x : v) x = normal(rng);
      fwd_.write_kv(storage_, l, static_cast<int64_t>(block) * bs + index % bs, k.data(), v.data());
      for (const int32_t r : layout_.layers[l].appended_streams) {  // its residual window's rows, its index's sketch
        const BlockId rb = kv.groups[layout_.layers[r].group].blocks[index / bs];
        if (rb >= 0) fwd_.write_kv(storage_, r, static_cast<int64_t>(rb) * bs + index % bs, k.data(), v.data());
      }
    }
  }
  Request* req = scheduler_.find(id);
  kv_manager_.cache_full_blocks(req->kv, req->tokens, n);  // windowed groups free what no query will see
  refresh_gauges();
  return id;
}

void Engine::forward_only(const ForwardBatch& batch) {
  SLIMKV_CHECK(batch.num_groups() == layout_.num_groups(), "forward_only: a batch of {} KV groups for {}",
               batch.num_groups(), layout_.num_groups());
  const size_t rows_floats = batch.logits_rows.size() * static_cast<size_t>(model_.config.vocab_size);
  if (rows_floats > logits_.size()) logits_.resize(rows_floats);  // rank 0's verify chunks: a row per draft too
  for (const SummaryFold& f : batch.summary_folds) apply_summary_fold(storage_, f);  // rank 0's merges, my heads
  fwd_.forward(batch, storage_, logits_.data());
}

int64_t Engine::kv_bytes_in_use() const {
  int64_t b = 0;
  for (int32_t p = 0; p < kv_manager_.num_pools(); ++p) {
    b += static_cast<int64_t>(kv_manager_.pool(p).num_used_blocks()) * layout_.bytes_per_block(p);
  }
  return b;
}

int64_t Engine::record_bytes_in_use() const {
  std::vector<int64_t> per_block(layout_.num_groups(), 0);  // [group] bytes of one block's records
  for (const KvLayerGeometry& g : layout_.layers) per_block[g.group] += g.bytes_per_token() * layout_.block_size_tokens;
  int64_t total = 0;
  for (const Request* r : scheduler_.running()) {
    for (size_t g = 0; g < r->kv.groups.size(); ++g) {
      const GroupKv& gk = r->kv.groups[g];
      for (BlockId b : gk.blocks) total += b >= 0 ? per_block[g] : 0;
      total += ((gk.state_source >= 0) + (gk.snapshot_block >= 0)) * per_block[g];
      total += static_cast<int64_t>(gk.draft_states.size()) * per_block[g];
    }
  }
  return total;
}

bool Engine::abort(RequestId id, FinishReason why) {
  bool ok = scheduler_.abort(id, now_ms(), why);
  refresh_gauges();
  return ok;
}

std::vector<StepEvent> Engine::step() {
  const double start = now_ms();
  restore_for_admission();
  const double propose_start = now_ms();
  plan_drafts();
  const double propose_ms = now_ms() - propose_start;
  SchedOutput out = scheduler_.schedule(start);
  metrics_.num_preemptions += out.num_preempted;
  Profiler* prof = Profiler::active();
  if (prof) {  // the step's phase: decode when every chunk is one sampled token
    bool decode = !out.chunks.empty();
    for (const auto& c : out.chunks) decode = decode && c.samples && c.token_ids.size() == 1u + c.num_drafts;
    prof->set_decode(decode);
    prof->add(ProfKind::SpecPropose, propose_ms / 1000.0);
    prof->add(ProfKind::Scheduling, (now_ms() - start - propose_ms) / 1000.0);
  }
  std::vector<int32_t> sampled, accepted;  // tokens of every sampling chunk in order; per verify chunk, drafts kept
  size_t mtp_first = 0;                    // the step's first hidden row for the MTP head
  std::vector<TokenLogprobs>& logprobs = step_logprobs_;  // [sampled] (empty entries when not requested)
  logprobs.clear();
  if (!out.chunks.empty()) {
    build_forward_batch(out, cfg_.cache.block_size, layout_.groups, batch_);
    int32_t need = 1;  // the most any sampled row reads, or 0: whole rows
    for (const auto& c : out.chunks) {
      if (!c.samples) continue;
      const int32_t k = logits_candidates(*scheduler_.find(c.id));
      need = k == 0 || need == 0 ? 0 : std::max(need, k);
    }
    batch_.logits_candidates = need;
    batch_.summary_folds.swap(pending_folds_);  // the folds since the last step, for the followers
    pending_folds_.clear();
    const PooledRows pooled = plan_pooled_rows(out, scheduler_, batch_);  // embedding requests' rows to keep
    mtp_first = batch_.hidden_rows.size();
    if (mtp_feeding_) keep_mtp_rows();  // every row's hidden state, after the pooled rows
    fwd_.set_step_loras(plan_adapter_rows(out, scheduler_, batch_));     // each token's LoRA adapter, if any
    sync_tier();  // blocks this step's allocations reuse: every rank saves its part before the forward writes
    if (before_forward_) before_forward_(batch_);
    const size_t rows_floats = batch_.logits_rows.size() * static_cast<size_t>(model_.config.vocab_size);
    if (rows_floats > logits_.size()) logits_.resize(rows_floats);  // verify chunks: a row per draft too
    fwd_.forward(batch_, storage_, logits_.data());
    fold_pooled_rows(pooled, batch_, fwd_.hidden_states().data(), model_.config.dim);
    for (int32_t g = 0; g < layout_.num_groups(); ++g) {  // attention mass per page -> per-block importance
      if (!layout_.groups[g].spec.dynamic()) continue;
      ProfScope ps(ProfKind::SparseScoring);
      for (size_t s = 0; s < out.chunks.size(); ++s) {  // a verify chunk's rows once verified (below)
        if (out.chunks[s].num_drafts > 0) continue;
        accumulate_importance(batch_, g, fwd_.page_importance(g), s, scheduler_.find(out.chunks[s].id)->kv.groups[g]);
      }
    }
    ProfScope ps(ProfKind::Sampling);
    size_t row = 0;
    int32_t first_token = 0;  // the chunk's first token in the batch
    const int32_t vocab = model_.config.vocab_size;
    for (size_t ci = 0; ci < out.chunks.size(); ++ci) {
      const ScheduledChunk& c = out.chunks[ci];
      first_token += ci > 0 ? static_cast<int32_t>(out.chunks[ci - 1].token_ids.size()) : 0;
      if (!c.samples) continue;
      if (c.num_drafts > 0) {  // a verify chunk: its rows into the accepted drafts and the token after them
        verify_chunk(c, logits_.data() + row * vocab, sampled, accepted);
        add_verified_importance(c.id, ci, first_token, 1 + accepted.back());
        logprobs.emplace_back();
        row += c.num_drafts + 1;
        continue;
      }
      Request* r = scheduler_.find(c.id);
      float* logits = logits_.data() + row * vocab;  // [vocab] this request's next-token logits
      const RequestParams& p = r->params;
      if (r->num_output_tokens() < p.min_tokens) {
        if (p.eos_id >= 0 && !p.ignore_eos) logits[p.eos_id] = -INFINITY;
        for (int32_t id : p.stop_token_ids) logits[id] = -INFINITY;
      }
      if (p.sampling.has_penalties()) {  // off: the row is left as it is (bit-identical sampling)
        r->token_counts.sync(r->tokens, r->num_prompt_tokens);
        apply_penalties(logits, vocab, p.sampling, r->token_counts.seen());
      }
      int32_t tok = r->sampler.sample(logits, vocab);
      if (r->constraint) {  // structured output: sample, check, and mask only when the sample is refused
        if (!r->constraint->accepts(tok)) {
          r->constraint->mask(logits, vocab);
          tok = r->sampler.sample(logits, vocab);
        }
        r->constraint->advance(tok);
      }
      sampled.push_back(tok);
      if (p.logprobs >= 0) logprobs.push_back(compute_logprobs(logits, vocab, tok, std::min(p.logprobs, vocab)));
      else logprobs.emplace_back();
      ++row;
    }
  }
  const double now = now_ms();
  bool decode_only = !out.chunks.empty();
  for (const auto& c : out.chunks) {
    decode_only = decode_only && c.samples && c.token_ids.size() == static_cast<size_t>(1 + c.num_drafts);
  }
  if (decode_only) {
    ++metrics_.decode_steps;
    metrics_.decode_tokens += static_cast<int64_t>(sampled.size());
    metrics_.decode_step_ms += now - start;
    if (spec_.on()) spec_governor_.record(static_cast<int64_t>(sampled.size()), now - start);
  }
  for (const auto& c : out.chunks) {  // inter-token latency: gap since the request's previous token
    if (!c.samples) continue;
    Request* r = scheduler_.find(c.id);
    if (r->times.last_token_ms >= 0) metrics_.record_token_gap(now - r->times.last_token_ms);
  }
  const double update_start = now_ms();
  const double sel_before = prof ? prof->current_seconds(ProfKind::SparseSelection) : 0.0;
  std::vector<StepEvent> events = scheduler_.update(out, sampled, accepted, now);
  if (mtp_feeding_ && !out.chunks.empty()) observe_mtp_rows(out, accepted, mtp_first);  // their next tokens known
  if (prof) {  // update's own time, less the eviction it timed itself
    const double sel = prof->current_seconds(ProfKind::SparseSelection);
    prof->add(ProfKind::Scheduling, (now_ms() - update_start) / 1000.0 - (sel - sel_before));
  }
  SLIMKV_CHECK(events.size() <= sampled.size(), "step: {} events for {} sampled tokens", events.size(),
               sampled.size());
  // a sampling chunk's events are contiguous (a verify chunk's several, none with logprobs): one logprobs entry each
  for (size_t i = 0, k = 0; i < events.size(); ++i) {
    if (i > 0 && events[i].id != events[i - 1].id) ++k;
    SLIMKV_CHECK(k < logprobs.size(), "step: events of more chunks than sampled");
    events[i].logprob = logprobs[k].logprob;
    events[i].top_logprobs.swap(logprobs[k].top);
  }
  for (auto& r : scheduler_.take_finished()) {
    metrics_.record_finished(*r);
    finished_.push_back(std::move(r));
  }
  ++metrics_.num_steps;
  refresh_gauges();
  if (prof) prof->add_step((now_ms() - start) / 1000.0, out.num_tokens);
  return events;
}

std::vector<std::unique_ptr<Request>> Engine::take_finished() {
  for (auto& r : scheduler_.take_finished()) {  // e.g. aborted between steps
    metrics_.record_finished(*r);
    finished_.push_back(std::move(r));
  }
  std::vector<std::unique_ptr<Request>> out;
  out.swap(finished_);
  return out;
}

void Engine::refresh_gauges() {
  metrics_.num_running = scheduler_.num_running();
  metrics_.num_running_peak = std::max(metrics_.num_running_peak, metrics_.num_running);
  metrics_.num_waiting = scheduler_.num_waiting();
  metrics_.blocks_used = kv_manager_.num_used_blocks();
  peak_used_blocks_ = std::max(peak_used_blocks_, metrics_.blocks_used);
  metrics_.blocks_total = kv_manager_.num_blocks();
  const int64_t used_bytes = kv_bytes_in_use();
  peak_kv_bytes_ = std::max(peak_kv_bytes_, used_bytes);
  metrics_.kv_usage = static_cast<double>(used_bytes) / static_cast<double>(storage_.size_bytes());
  metrics_.kv_usage_peak = std::max(metrics_.kv_usage_peak, metrics_.kv_usage);
  metrics_.prefix_query_tokens = kv_manager_.prefix_counters().query_tokens;
  metrics_.prefix_hit_tokens = kv_manager_.prefix_counters().hit_tokens;
  const auto& sc = scheduler_.counters();
  metrics_.prompt_tokens = sc.prompt_tokens;
  metrics_.generation_tokens = sc.generated_tokens;
  metrics_.num_finished = sc.num_finished;
  metrics_.num_aborted = sc.num_aborted;
  metrics_.num_rejected = sc.num_rejected + vocab_rejected_;
}

}  // namespace slimkv
