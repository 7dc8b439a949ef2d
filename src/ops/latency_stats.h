// Load-test statistics with vLLM's benchmark definitions: TTFT; TPOT = (E2E − TTFT) / (output tokens − 1) with the
// output count from `usage`; ITL = every gap between consecutive streamed chunks; E2E; request and token
// throughput; goodput = requests per second meeting every SLO. Pure functions. Must not know: HTTP or servers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/metrics.h"

namespace slimkv {

struct RequestRecord {
  int64_t index = 0;
  double start_s = 0;                 // when it was sent (from the start of the run)
  double ttft_s = -1, e2e_s = -1;     // -1: never got there
  std::vector<double> chunk_s;        // arrival time of each token chunk, relative to start_s
  int64_t prompt_tokens = 0, output_tokens = 0, cached_tokens = 0;  // from usage
  int64_t streamed_tokens = 0;        // token chunks received
  bool ok = false;
  std::string error;                  // when !ok
};

using Distribution = LatencySummary;  // count, mean, median, p90, p99, max (nearest-rank), as the engine's
inline Distribution distribution(std::vector<double> samples) { return summarize(std::move(samples)); }

struct Slo {                          // 0 = not constrained
  double ttft_ms = 0, tpot_ms = 0, e2e_ms = 0;
};
Slo parse_slo(const std::string& spec);  // "ttft:500,tpot:50,e2e:10000"; throws Error

struct LoadSummary {
  int64_t num_requests = 0, num_ok = 0, num_failed = 0, num_token_mismatch = 0;
  double duration_s = 0;
  Distribution ttft_ms, tpot_ms, itl_ms, e2e_ms;
  double request_throughput = 0, output_token_throughput = 0, total_token_throughput = 0;
  double goodput = 0;                 // requests/s meeting the SLO
  int64_t num_meeting_slo = 0;
  int64_t prompt_tokens = 0, output_tokens = 0, cached_tokens = 0;
};

LoadSummary summarize_load(const std::vector<RequestRecord>& records, double duration_s, const Slo& slo);
double tpot_ms(const RequestRecord& r);  // -1 when undefined (fewer than 2 output tokens)

}  // namespace slimkv
