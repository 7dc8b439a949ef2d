// Engine counters and per-request latency samples (one component; issue D exposes it on /metrics with vLLM
// names). Summaries give mean / median / p90 / p99. Must not know: how requests are scheduled or run.
#pragma once
#include <cstdint>
#include <array>
#include <vector>

#include "sched/request.h"

namespace slimkv {

struct LatencySummary {
  int64_t count = 0;
  double mean = 0, median = 0, p90 = 0, p99 = 0, max = 0;
};
LatencySummary summarize(std::vector<double> samples);

struct Metrics {
  // Per-request samples in milliseconds, appended when a request finishes (or per token for ITL).
  std::vector<double> ttft_ms, tpot_ms, itl_ms, e2e_ms, queue_ms, prefill_ms, decode_ms;
  // Gauges, refreshed every step.
  int32_t num_running = 0, num_waiting = 0, num_running_peak = 0;
  int32_t blocks_used = 0, blocks_total = 0;
  double kv_usage = 0, kv_usage_peak = 0;
  // Counters.
  int64_t num_steps = 0, num_preemptions = 0;
  // Steps whose every chunk was one decode token: their tokens and wall time give the decode throughput.
  int64_t decode_steps = 0, decode_tokens = 0;
  double decode_step_ms = 0;
  int64_t prefix_query_tokens = 0, prefix_hit_tokens = 0;
  int64_t prompt_tokens = 0, generation_tokens = 0;
  int64_t num_finished = 0, num_aborted = 0, num_rejected = 0;
  // Speculative decoding (vLLM's spec-decode counters): verify chunks, drafted tokens, accepted tokens, and
  // accepted tokens by draft position (the first 16).
  int64_t spec_drafts = 0, spec_draft_tokens = 0, spec_accepted_tokens = 0;
  std::array<int64_t, 16> spec_accepted_per_pos{};

  void record_token_gap(double gap_ms) { itl_ms.push_back(gap_ms); }
  // A long-running consumer (the server's histograms) takes the samples and clears them so they do not grow.
  void clear_samples() {
    for (auto* v : {&ttft_ms, &tpot_ms, &itl_ms, &e2e_ms, &queue_ms, &prefill_ms, &decode_ms}) v->clear();
  }
  void record_finished(const Request& r);  // TTFT, TPOT, E2E, queue, prefill, decode
  double prefix_hit_rate() const {
    return prefix_query_tokens ? static_cast<double>(prefix_hit_tokens) / prefix_query_tokens : 0.0;
  }
};

}  // namespace slimkv
