// Test helpers for the engine: a small default config and one driver that feeds requests (optionally arriving
// at later steps), checks block-pool integrity after every step, and returns each request's tokens.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace slimkv::test {

// Dynamic retention on c: sinks + a recent window + the most attended blocks up to topk tokens; evicted blocks
// merged into summaries or dropped; blocks of block_size tokens.
inline void use_dynamic_retention(EngineConfig& c, int32_t topk, int32_t sinks, int32_t window, bool merge,
                                  int32_t block_size) {
  c.compress.kv_sparse_mode = "dynamic";
  c.compress.kv_sparse_topk = topk;
  c.compress.kv_sink_tokens = sinks;
  c.compress.kv_recent_window = window;
  if (merge) c.compress.kv_evict_policy = "merge";
  c.cache.block_size = block_size;
}

// The speculative tests' cache kinds on c: the storage dtype (a residual window of residual_tokens), and sparse =
// "" | static (sinks 4 + window 32) | select (oracle rows: 24 of them, sinks 4, window 16) | dynamic | merge
// (dynamic retention: sinks 4 + window 8 + 2 blocks of 8 by attention, evicted ones dropped or merged).
inline void use_cache_kind(EngineConfig& c, const std::string& dtype, int32_t residual_tokens,
                           const std::string& sparse) {
  c.compress.kv_cache_dtype = dtype;
  c.compress.kv_residual_tokens = residual_tokens;
  if (sparse == "static") {
    c.compress.kv_sparse_mode = "static";
    c.compress.kv_sink_tokens = 4;
    c.compress.kv_recent_window = 32;
  } else if (sparse == "dynamic" || sparse == "merge") {
    use_dynamic_retention(c, 28, 4, 8, sparse == "merge", 8);
  } else if (sparse == "select") {
    c.compress.kv_sparse_mode = "select";
    c.compress.kv_select_index = "oracle";
    c.compress.kv_sparse_topk = 24;
    c.compress.kv_sink_tokens = 4;
    c.compress.kv_recent_window = 16;
  }
}

// 0.02 GiB of KV, 64-token steps, 2 threads, prefix caching on, no compression.
inline EngineConfig small_engine_config() {
  EngineConfig c;
  c.cache.kv_cache_memory_gib = 0.02;
  c.sched.max_num_batched_tokens = 64;
  c.threads = 2;
  return c;
}

struct TestRequest {
  std::vector<int32_t> prompt;
  int32_t max_tokens = 16;
  int32_t arrival_step = 0;
};

// `count` requests of BOS + first_len + i * step_len tokens, token t of request i = 3 + (t * mul + i * shift) % 509
// (a 512-token vocabulary's ordinary ids, different per request).
inline std::vector<TestRequest> patterned_requests(int count, int first_len, int step_len, int mul, int shift,
                                                   int32_t max_tokens) {
  std::vector<TestRequest> out;
  for (int i = 0; i < count; ++i) {
    TestRequest j;
    j.prompt = {1};
    for (int t = 0; t < first_len + step_len * i; ++t) j.prompt.push_back(3 + (t * mul + i * shift) % 509);
    j.max_tokens = max_tokens;
    out.push_back(j);
  }
  return out;
}

struct EngineRun {
  std::vector<std::vector<int32_t>> tokens;  // per request, in input order
  Metrics metrics;
  int32_t peak_blocks = 0;
  int64_t evicted_blocks = 0;
  int32_t used_blocks_at_end = -1;
};

// Greedy, ignore_eos. Fails the test if a request is refused, integrity breaks, or blocks stay used at the end.
inline EngineRun run_requests(const Model& m, const EngineConfig& cfg, const std::vector<TestRequest>& reqs) {
  Engine e(m, cfg);
  EngineRun out;
  out.tokens.resize(reqs.size());
  std::map<RequestId, size_t> index;
  RequestParams p;
  p.ignore_eos = true;
  int32_t last_arrival = 0;
  for (const auto& r : reqs) last_arrival = std::max(last_arrival, r.arrival_step);
  for (int32_t step = 0; step < 1000000; ++step) {
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (reqs[i].arrival_step != step) continue;
      p.max_tokens = reqs[i].max_tokens;
      auto id = e.add_request(reqs[i].prompt, p);
      EXPECT_TRUE(std::holds_alternative<RequestId>(id)) << std::get<std::string>(id);
      if (auto* rid = std::get_if<RequestId>(&id)) index[*rid] = i;
    }
    if (step > last_arrival && !e.has_unfinished()) break;
    for (const auto& ev : e.step()) {
      if (ev.token >= 0) out.tokens[index[ev.id]].push_back(ev.token);
    }
    e.check_integrity();
  }
  EXPECT_FALSE(e.has_unfinished());
  out.metrics = e.metrics();
  out.peak_blocks = e.peak_used_blocks();
  out.evicted_blocks = e.kv_manager().num_evicted_blocks();
  out.used_blocks_at_end = e.kv_manager().num_used_blocks();
  EXPECT_EQ(out.used_blocks_at_end, 0);
  return out;
}

// Same prompts, all arriving at step 0 with the same max_tokens.
inline EngineRun run_prompts(const Model& m, const EngineConfig& cfg, const std::vector<std::vector<int32_t>>& prompts,
                             int32_t max_tokens) {
  std::vector<TestRequest> reqs;
  for (const auto& p : prompts) reqs.push_back({p, max_tokens, 0});
  return run_requests(m, cfg, reqs);
}

// Runs each request alone (one sequence, 7-token chunks, no prefix cache) under cfg and expects the tokens the
// batched run gave it: batched == single whatever the chunking.
inline void expect_each_alone_equal(const Model& m, const EngineConfig& cfg, const std::vector<TestRequest>& reqs,
                                    const EngineRun& batched, const std::string& what = "") {
  EngineConfig one = cfg;
  one.sched.max_num_seqs = 1;
  one.sched.max_num_batched_tokens = 7;
  one.cache.enable_prefix_caching = false;
  for (size_t i = 0; i < reqs.size(); ++i) {
    TestRequest r = reqs[i];
    r.arrival_step = 0;
    EXPECT_EQ(run_requests(m, one, {r}).tokens[0], batched.tokens[i]) << what << " request " << i;
  }
}

// A conversation: the prompts one after another, each run to its end (greedy, max_tokens each, EOS ignored), the
// pool checked after every step; the outputs, the prefix-hit tokens and the disk tier's counters (if any).
struct TurnsRun {
  std::vector<std::vector<int32_t>> tokens;
  int64_t hit_tokens = 0;
  KvOffloadCounters offload;
};

inline TurnsRun run_turns(Engine& e, const std::vector<std::vector<int32_t>>& prompts, int32_t max_tokens) {
  TurnsRun out;
  RequestParams p;
  p.ignore_eos = true;
  p.max_tokens = max_tokens;
  for (const auto& prompt : prompts) {
    const RequestId id = std::get<RequestId>(e.add_request(prompt, p));
    std::vector<int32_t> toks;
    while (e.has_unfinished()) {
      for (const auto& ev : e.step()) {
        if (ev.id == id && ev.token >= 0) toks.push_back(ev.token);
      }
      e.check_integrity();
    }
    out.tokens.push_back(std::move(toks));
  }
  out.hit_tokens = e.metrics().prefix_hit_tokens;
  if (e.offload()) out.offload = e.offload()->counters();
  return out;
}

}  // namespace slimkv::test
