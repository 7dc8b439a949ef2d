// The seed's health thresholds (4.4) and troubleshooting table (5.4) as pure rules: measured observations in,
// PASS/WARN checks and findings (symptom -> cause -> action, each citing the value it rests on) out.
// Must not know: where the observations came from (/metrics, a bench serve report, an eval).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace slimkv {

struct HealthThresholds {      // --threshold-*: the seed's defaults
  double ttft_ms = 500, tpot_ms = 50, memory_use = 0.85, cache_hit_rate = 0.60, queue_ms = 200;
  double sparse_share = 0.20;  // sparse-index share of decode time (seed 5.3)
  // Collectives' share of decode time under tensor parallelism (seed 5.4, "multi-card communication bottleneck"):
  // healthy 2-rank runs measured 4-25% (shared memory) and 5-11% (TCP loopback) over two sittings on a noisy
  // 2-vCPU VM, oversubscribed 4-rank runs 44-57% (docs/scale-out.md); 30% sits between.
  double collective_share = 0.30;
  double top1_agreement = 0.99;  // quality bar for "quality drop"
};

struct Observations {          // every field optional: a rule runs only on what was measured
  std::optional<double> ttft_ms, tpot_ms, queue_ms;  // a typical value (median or mean; the source says which)
  std::optional<double> kv_usage_peak;               // 0..1
  std::optional<double> prefix_hit_rate;             // 0..1
  std::optional<double> prefix_queries;              // tokens looked up (a hit rate over nothing means nothing)
  std::optional<double> preemptions;
  std::optional<double> kv_compression_ratio;        // f16 bytes / stored bytes (mean over layers)
  std::optional<double> sparse_share;                // from profile
  std::optional<double> collective_share;            // from profile under mpirun: all-reduces' share of decode
  std::optional<double> top1_agreement;              // from eval (compressed vs baseline)
  std::optional<double> waiting_requests;
  std::optional<double> tier_read_ms_per_token;      // the KV disk tier: read time per restored token
  std::optional<double> prefill_ms_per_token;        // prefill time per token computed (not hit)
  std::string source;                                // for the report
};

struct HealthCheck {
  std::string name, unit;
  double value = 0, threshold = 0;
  bool below = true;           // pass when value < threshold (false: pass when value > threshold)
  bool pass = false;
};

struct Finding {
  std::string symptom, cause, action, evidence;
};

std::vector<HealthCheck> health_checks(const Observations& o, const HealthThresholds& t);
std::vector<Finding> diagnose(const Observations& o, const HealthThresholds& t);

}  // namespace slimkv
