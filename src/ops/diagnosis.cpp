#include "ops/diagnosis.h"

#include <fmt/format.h>

namespace slimkv {

std::vector<HealthCheck> health_checks(const Observations& o, const HealthThresholds& t) {
  std::vector<HealthCheck> out;
  auto add = [&](const char* name, const std::optional<double>& v, double threshold, bool below, const char* unit) {
    if (!v) return;
    HealthCheck c{name, unit, *v, threshold, below, below ? *v < threshold : *v > threshold};
    out.push_back(c);
  };
  add("TTFT", o.ttft_ms, t.ttft_ms, true, "ms");
  add("TPOT", o.tpot_ms, t.tpot_ms, true, "ms");
  add("peak KV memory use", o.kv_usage_peak, t.memory_use, true, "");
  if (o.prefix_queries && *o.prefix_queries > 0) add("prefix cache hit rate", o.prefix_hit_rate, t.cache_hit_rate, false, "");
  add("queue time", o.queue_ms, t.queue_ms, true, "ms");
  return out;
}

std::vector<Finding> diagnose(const Observations& o, const HealthThresholds& t) {
  std::vector<Finding> f;
  if (o.top1_agreement && *o.top1_agreement < t.top1_agreement) {
    f.push_back({"quality drop", "compression too aggressive",
                 "step back one rung of the tuning ladder: a larger --kv-sparse-topk, a higher --kv-compression-rank, "
                 "or int8 instead of int4 (and compare with the same eval set and sampling)",
                 fmt::format("top-1 agreement {:.2f}% < {:.2f}%", 100 * *o.top1_agreement, 100 * t.top1_agreement)});
  }
  if (o.kv_compression_ratio && *o.kv_compression_ratio <= 1.05) {
    f.push_back({"memory not down", "no KV compression is active (the cache stores f16/f32 rows)",
                 "turn compression on: --kv-cache-dtype int8 (near-lossless), then sparse retention",
                 fmt::format("compression ratio vs f16 {:.2f}", *o.kv_compression_ratio)});
  }
  if (o.kv_usage_peak && *o.kv_usage_peak < 0.10 && o.kv_compression_ratio && *o.kv_compression_ratio > 1.05) {
    f.push_back({"memory not down", "the KV pool is preallocated far above what the load uses",
                 "lower --kv-cache-memory (or --kv-memory-utilization) so the saved memory is really freed",
                 fmt::format("peak KV usage {:.1f}% of the pool", 100 * *o.kv_usage_peak)});
  }
  if (o.sparse_share && *o.sparse_share > t.sparse_share) {
    f.push_back({"throughput down", "sparse-index overhead (scoring, top-K selection, gather)",
                 "raise --kv-sparse-topk (fewer evictions) or use --kv-sparse-mode static",
                 fmt::format("sparse-index share of decode {:.1f}% > {:.0f}%", 100 * *o.sparse_share, 100 * t.sparse_share)});
  }
  if (o.collective_share && *o.collective_share > t.collective_share) {
    f.push_back({"multi-rank communication bottleneck", "all-reduce time between ranks (a slow link, or ranks "
                 "waiting for an oversubscribed or slower one)",
                 "check the all-reduce time per step (slimkv profile), use fewer tensor-parallel ranks or replicas "
                 "instead (scripts/replicas), keep ranks on one host's shared memory",
                 fmt::format("collectives' share of decode {:.1f}% > {:.0f}%", 100 * *o.collective_share,
                             100 * t.collective_share)});
  }
  if (o.ttft_ms && *o.ttft_ms >= t.ttft_ms && (!o.tpot_ms || *o.tpot_ms < t.tpot_ms)) {
    f.push_back({"TTFT spike", "prefill is the bottleneck (long prompts, or prefill waiting behind decode)",
                 "lower --max-num-seqs or raise --max-num-batched-tokens; enable prefix caching for shared prompts",
                 fmt::format("TTFT {:.0f} ms >= {:.0f} ms while TPOT is fine", *o.ttft_ms, t.ttft_ms)});
  }
  if (o.tpot_ms && *o.tpot_ms >= t.tpot_ms) {
    f.push_back({"TPOT high", "decode is slow: too many concurrent sequences, or cache access after compression",
                 "lower --max-num-seqs; profile the decode kernels (slimkv profile)",
                 fmt::format("TPOT {:.1f} ms >= {:.0f} ms", *o.tpot_ms, t.tpot_ms)});
  }
  if (o.prefix_hit_rate && o.prefix_queries && *o.prefix_queries > 0 && *o.prefix_hit_rate < t.cache_hit_rate) {
    f.push_back({"low cache hit rate", "block management does not match the prefixes (blocks too large, or no reuse)",
                 "lower --block-size (e.g. 16 -> 8), keep --enable-prefix-caching, send shared prefixes verbatim",
                 fmt::format("prefix hit rate {:.1f}% < {:.0f}%", 100 * *o.prefix_hit_rate, 100 * t.cache_hit_rate)});
  }
  if (o.tier_read_ms_per_token && o.prefill_ms_per_token && *o.tier_read_ms_per_token >= *o.prefill_ms_per_token) {
    f.push_back({"disk tier slower than recompute", "restoring a block from --kv-offload-dir costs more than "
                 "computing it (a slow or remote disk, or a tiny model)",
                 "put --kv-offload-dir on local flash (or tmpfs), or run without the tier",
                 fmt::format("tier read {:.3f} ms per token >= prefill {:.3f} ms per token",
                             *o.tier_read_ms_per_token, *o.prefill_ms_per_token)});
  }
  if (o.preemptions && *o.preemptions > 0) {
    f.push_back({"preemptions", "the KV pool runs out under this load (requests are recomputed)",
                 "compress the cache (int8 halves it) or raise --kv-cache-memory; lower --max-num-seqs",
                 fmt::format("{:.0f} preemptions", *o.preemptions)});
  }
  if (o.kv_usage_peak && *o.kv_usage_peak >= t.memory_use) {
    f.push_back({"memory pressure", "the KV pool is nearly full at peak",
                 "compress further or give the KV cache more memory before the load grows",
                 fmt::format("peak KV usage {:.1f}% >= {:.0f}%", 100 * *o.kv_usage_peak, 100 * t.memory_use)});
  }
  if (o.queue_ms && *o.queue_ms >= t.queue_ms) {
    f.push_back({"queueing", "requests wait for a slot: capacity is short for the arrival rate",
                 "raise --max-num-seqs if KV memory allows (compression frees it), or add capacity",
                 fmt::format("queue time {:.0f} ms >= {:.0f} ms", *o.queue_ms, t.queue_ms)});
  }
  return f;
}

}  // namespace slimkv
