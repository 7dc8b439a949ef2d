#include "ops/metrics_observations.h"

namespace slimkv {

Observations observations_from_metrics(const PromSamples& now, const PromSamples* before) {
  auto delta = [&](const std::string& suffix) {
    const std::string name = metric_name(now, suffix);
    return now.sum(name) - (before ? before->sum(name) : 0.0);
  };
  auto hist_mean_ms = [&](const std::string& base) -> std::optional<double> {
    const double n = delta(base + "_count");
    if (n <= 0) return std::nullopt;
    return 1000.0 * delta(base + "_sum") / n;
  };
  Observations o;
  o.source = "/metrics";
  o.ttft_ms = hist_mean_ms("time_to_first_token_seconds");
  o.tpot_ms = hist_mean_ms("request_time_per_output_token_seconds");
  o.queue_ms = hist_mean_ms("request_queue_time_seconds");
  if (now.has(metric_name(now, "kv_cache_usage_perc"))) o.kv_usage_peak = now.sum(metric_name(now, "kv_cache_usage_perc"));
  const double q = delta("prefix_cache_queries_total");
  o.prefix_queries = q;
  if (q > 0) o.prefix_hit_rate = delta("prefix_cache_hits_total") / q;
  o.preemptions = delta("num_preemptions_total");
  o.waiting_requests = now.sum(metric_name(now, "num_requests_waiting"));
  const double restored = delta("kv_offload_restored_tokens_total");
  if (restored > 0) o.tier_read_ms_per_token = 1000.0 * delta("kv_offload_read_seconds_total") / restored;
  const double computed = delta("prompt_tokens_total") - delta("prefix_cache_hits_total");
  if (computed > 0) o.prefill_ms_per_token = 1000.0 * delta("request_prefill_time_seconds_sum") / computed;
  double ratio_sum = 0;
  int n = 0;
  for (auto it = now.samples.lower_bound("slimkv:kv_cache_compression_ratio{");
       it != now.samples.end() && it->first.rfind("slimkv:kv_cache_compression_ratio{", 0) == 0; ++it) {
    ratio_sum += it->second;
    ++n;
  }
  if (n > 0) o.kv_compression_ratio = ratio_sum / n;
  return o;
}

}  // namespace slimkv
