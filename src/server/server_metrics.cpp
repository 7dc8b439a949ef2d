#include "server/server_metrics.h"

#include <algorithm>
#include <chrono>

namespace slimkv {
namespace {

// Buckets wide enough for a CPU: from 1 ms to minutes.
std::vector<double> latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
          1.0,   2.5,    5.0,   7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0};
}

// What one token of the layer would cost in an f16 cache of its K and V heads (the compression ratios' numerator).
double f16_bytes_per_token(const KvLayerGeometry& g) { return 2.0 * g.num_kv_heads * (g.head_dim_k + g.head_dim_v); }

void observe_ms(PromHistogram& h, const std::vector<double>& samples_ms) {
  for (double ms : samples_ms) h.observe(ms / 1000.0);
}

}  // namespace

ServerMetrics::ServerMetrics()
    : ttft_(latency_buckets()), itl_(latency_buckets()), tpot_(latency_buckets()), e2e_(latency_buckets()),
      queue_(latency_buckets()), prefill_(latency_buckets()), decode_(latency_buckets()) {
  for (const char* r : {"stop", "length", "abort"}) finished_by_reason_[r] = 0;
}

void ServerMetrics::on_step(Engine& engine, const std::vector<const Request*>& finished) {
  const Metrics& m = engine.metrics();
  observe_ms(ttft_, m.ttft_ms);
  observe_ms(itl_, m.itl_ms);
  observe_ms(tpot_, m.tpot_ms);
  observe_ms(e2e_, m.e2e_ms);
  observe_ms(queue_, m.queue_ms);
  observe_ms(prefill_, m.prefill_ms);
  observe_ms(decode_, m.decode_ms);
  engine.clear_metric_samples();
  for (const Request* r : finished) ++finished_by_reason_[finish_reason_name(r->finish)];
}

void ServerMetrics::restate(FinishReason from, FinishReason to) {
  --finished_by_reason_[finish_reason_name(from)];
  ++finished_by_reason_[finish_reason_name(to)];
}

void ServerMetrics::write(PromWriter& w, const std::string& p, const Engine& engine, const PromLabels& labels) const {
  const Metrics& m = engine.metrics();
  auto one = [&](const std::string& name, const char* type, const char* help, double v) {
    w.family(p + name, type, help);
    w.sample(p + name, labels, v);
  };
  one("num_requests_running", "gauge", "Number of requests in model execution batches.", m.num_running);
  one("num_requests_waiting", "gauge", "Number of requests waiting to be processed.", m.num_waiting);
  one("kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", m.kv_usage);
  one("prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.",
      static_cast<double>(m.prefix_query_tokens));
  one("prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.",
      static_cast<double>(m.prefix_hit_tokens));
  one("num_preemptions_total", "counter", "Cumulative number of preemptions from the engine.",
      static_cast<double>(m.num_preemptions));
  // speculative decoding, vLLM's counter names (under the same prefix)
  one("spec_decode_num_drafts_total", "counter", "Verify chunks (one per request and step that drafted).",
      static_cast<double>(m.spec_drafts));
  one("spec_decode_num_draft_tokens_total", "counter", "Drafted tokens.", static_cast<double>(m.spec_draft_tokens));
  one("spec_decode_num_accepted_tokens_total", "counter", "Drafted tokens the target accepted.",
      static_cast<double>(m.spec_accepted_tokens));
  w.family(p + "spec_decode_num_accepted_tokens_per_pos_total", "counter", "Accepted tokens by draft position.");
  for (size_t i = 0; i < m.spec_accepted_per_pos.size(); ++i) {
    PromLabels pl = labels;
    pl.emplace_back("position", std::to_string(i));
    w.sample(p + "spec_decode_num_accepted_tokens_per_pos_total", pl, static_cast<double>(m.spec_accepted_per_pos[i]));
  }
  one("prompt_tokens_total", "counter", "Number of prefill tokens processed.", static_cast<double>(m.prompt_tokens));
  one("generation_tokens_total", "counter", "Number of generation tokens processed.",
      static_cast<double>(m.generation_tokens));
  const PagedAttention::ReadStats& reads = engine.read_stats();
  one("attention_rows_read_total", "counter", "KV rows attention read, per query token and KV head, every layer "
      "(select mode reads a share of the visible ones).", static_cast<double>(reads.rows_read));
  one("attention_rows_visible_total", "counter", "KV rows the same queries could see (their contexts).",
      static_cast<double>(reads.rows_visible));
  one("select_index_rows_scored_total", "counter", "Select mode: index entries scored to choose the rows read.",
      static_cast<double>(reads.index_rows));
  w.family(p + "request_success_total", "counter", "Count of finished requests by finish reason.");
  for (const auto& [reason, n] : finished_by_reason_) {
    PromLabels l = labels;
    l.emplace_back("finished_reason", reason);
    w.sample(p + "request_success_total", l, static_cast<double>(n));
  }
  auto hist = [&](const char* name, const char* help, const PromHistogram& h) {
    w.family(p + name, "histogram", help);
    w.histogram(p + name, labels, h);
  };
  hist("time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttft_);
  hist("inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itl_);
  hist("request_time_per_output_token_seconds", "Histogram of time per output token in seconds.", tpot_);
  hist("e2e_request_latency_seconds", "Histogram of end-to-end request latency in seconds.", e2e_);
  hist("request_queue_time_seconds", "Histogram of time spent waiting in the queue in seconds.", queue_);
  hist("request_prefill_time_seconds", "Histogram of time spent in prefill in seconds.", prefill_);
  hist("request_decode_time_seconds", "Histogram of time spent in decode in seconds.", decode_);
}

// What an inference gateway's endpoint picker reads besides vLLM's current names (Gateway API Inference Extension's
// model-server protocol: queued and running requests, KV-cache utilisation; llm-d's prefix scorer: the cache
// config): KV usage under vLLM's former name, which older pickers read by default, and the block geometry.
void ServerMetrics::write_gateway_aliases(PromWriter& w, const Engine& engine, const PromLabels& labels) const {
  w.family("vllm:gpu_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage (former name).");
  w.sample("vllm:gpu_cache_usage_perc", labels, engine.metrics().kv_usage);
  w.family("vllm:cache_config_info", "gauge", "Information of the KV cache configuration (in labels; value 1).");
  PromLabels info = labels;
  info.emplace_back("block_size", std::to_string(engine.kv_layout().block_size_tokens));
  info.emplace_back("num_gpu_blocks", std::to_string(static_cast<int64_t>(engine.metrics().blocks_total)));
  w.sample("vllm:cache_config_info", info, 1);
}

namespace {

// The disk tier (--kv-offload-dir), LMCache-style: hits / misses / blocks and bytes moved, time spent, per tier.
void write_offload(PromWriter& w, const KvOffload& offload, const PromLabels& labels) {
  const KvOffloadCounters c = offload.counters();
  PromLabels tl = labels;
  tl.emplace_back("tier", "disk");
  auto one = [&](const char* name, const char* type, const char* help, double v) {
    w.family(name, type, help);
    w.sample(name, tl, v);
  };
  one("slimkv:kv_offload_hits_total", "counter", "Blocks read back from the tier (checked).",
      static_cast<double>(c.tier.hits));
  one("slimkv:kv_offload_misses_total", "counter", "Lookups the tier could not serve (absent, short or corrupt).",
      static_cast<double>(c.tier.misses));
  one("slimkv:kv_offload_corrupt_total", "counter", "Blocks whose checksum failed (recomputed).",
      static_cast<double>(c.tier.corrupt));
  one("slimkv:kv_offload_restored_tokens_total", "counter", "Prompt tokens restored instead of computed.",
      static_cast<double>(c.restored_tokens));
  one("slimkv:kv_offload_unshared_total", "counter",
      "Blocks rank 0 read back that another tensor-parallel rank could not (forgotten: computed instead).",
      static_cast<double>(c.unshared_blocks));
  one("slimkv:kv_offload_write_bytes_total", "counter", "Bytes written to the tier.",
      static_cast<double>(c.tier.written_bytes));
  one("slimkv:kv_offload_read_bytes_total", "counter", "Bytes read from the tier.", static_cast<double>(c.tier.read_bytes));
  one("slimkv:kv_offload_dropped_total", "counter", "Blocks not written (queue full or write error).",
      static_cast<double>(c.tier.dropped));
  one("slimkv:kv_offload_write_seconds_total", "counter", "Time the tier's I/O thread spent writing.",
      c.tier.write_ms / 1000.0);
  one("slimkv:kv_offload_read_seconds_total", "counter",
      "Time the engine thread spent reading blocks back (its own reads, and waits for a read-ahead in flight).",
      c.tier.read_ms / 1000.0);
  one("slimkv:kv_offload_prefetched_total", "counter", "Blocks read ahead by the tier's I/O thread for waiting requests.",
      static_cast<double>(c.tier.prefetched));
  one("slimkv:kv_offload_prefetch_used_total", "counter", "Read-ahead blocks a restore then took from memory.",
      static_cast<double>(c.tier.prefetch_used));
  one("slimkv:kv_offload_prefetch_seconds_total", "counter", "Time the tier's I/O thread spent reading ahead.",
      c.tier.prefetch_ms / 1000.0);
}

}  // namespace

std::string ServerMetrics::render(const Engine& engine, const std::string& model_name, bool vllm_names) const {
  PromWriter w;
  const PromLabels labels = {{"model_name", model_name}};
  write(w, "slimkv:", engine, labels);
  if (vllm_names) {
    write(w, "vllm:", engine, labels);
    write_gateway_aliases(w, engine, labels);
  }
  // slimkv's own: the KV cache's physical size per token and its ratio to an f16 cache, per layer.
  const KvLayout& layout = engine.kv_layout();
  w.family("slimkv:kv_cache_bytes_per_token", "gauge", "Bytes one token occupies in the KV cache, per layer.");
  // (a recurrent state is per sequence, not per token: its streams and groups are left out of these gauges)
  for (int32_t l = 0; l < layout.num_layers(); ++l) {
    if (layout.layers[l].spec.recurrent_state()) continue;
    PromLabels ll = labels;
    ll.emplace_back("layer", std::to_string(l));
    w.sample("slimkv:kv_cache_bytes_per_token", ll, static_cast<double>(layout.layers[l].bytes_per_token()));
  }
  w.family("slimkv:kv_cache_compression_ratio", "gauge",
           "f16 KV bytes per token divided by the stored bytes per token, per layer (2 = half the size of f16).");
  for (int32_t l = 0; l < layout.num_layers(); ++l) {
    const KvLayerGeometry& g = layout.layers[l];
    if (g.spec.recurrent_state()) continue;
    PromLabels ll = labels;
    ll.emplace_back("layer", std::to_string(l));
    w.sample("slimkv:kv_cache_compression_ratio", ll,
             f16_bytes_per_token(g) / static_cast<double>(g.bytes_per_token()));
  }
  // Per KV group (layers whose block tables behave alike): bytes per token of context, summed over the group's
  // layers (a compressed stream's entry spread over the tokens it stands for), and the ratio to an f16 cache of
  // the same layers holding every token.
  double total_bytes = 0, total_f16 = 0;
  w.family("slimkv:kv_cache_group_bytes_per_token", "gauge",
           "Bytes one token of context occupies in the KV cache, per KV group (summed over its layers).");
  std::vector<std::pair<double, double>> per_group;  // stored, f16
  for (int32_t g = 0; g < layout.num_groups(); ++g) {
    double stored = 0, f16 = 0;
    for (int32_t l : layout.groups[g].layers) {
      const KvLayerGeometry& geo = layout.layers[l];
      if (geo.spec.recurrent_state()) continue;  // 0 per token
      stored += static_cast<double>(geo.bytes_per_token()) / std::max(1, geo.spec.entry_tokens);
      f16 += f16_bytes_per_token(geo);
    }
    per_group.emplace_back(stored, f16);
    total_bytes += stored;
    total_f16 += f16;
    PromLabels gl = labels;
    gl.emplace_back("group", std::to_string(g));
    gl.emplace_back("kind", layout.groups[g].spec.describe());
    w.sample("slimkv:kv_cache_group_bytes_per_token", gl, stored);
  }
  auto group_family = [&](const char* name, const char* help, auto value) {
    w.family(name, "gauge", help);
    for (int32_t g = 0; g < layout.num_groups(); ++g) {
      PromLabels gl = labels;
      gl.emplace_back("group", std::to_string(g));
      w.sample(name, gl, value(g));
    }
  };
  group_family("slimkv:kv_cache_group_compression_ratio",
               "f16 KV bytes per token of the group's layers divided by its stored bytes per token.",
               [&](int32_t g) { return per_group[g].first > 0 ? per_group[g].second / per_group[g].first : 1.0; });
  group_family("slimkv:kv_cache_group_layers", "Layers (cache streams) in the KV group.",
               [&](int32_t g) { return static_cast<double>(layout.groups[g].layers.size()); });
  w.family("slimkv:kv_cache_total_bytes_per_token", "gauge", "Bytes one token of context occupies, all layers.");
  w.sample("slimkv:kv_cache_total_bytes_per_token", labels, total_bytes);
  w.family("slimkv:kv_cache_total_compression_ratio", "gauge",
           "f16 KV bytes per token of all layers divided by the stored bytes per token.");
  w.sample("slimkv:kv_cache_total_compression_ratio", labels, total_bytes > 0 ? total_f16 / total_bytes : 0.0);
  w.family("slimkv:uptime_seconds", "gauge", "Seconds since the server started (a clock for rates over scrapes).");
  w.sample("slimkv:uptime_seconds", labels,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  w.family("slimkv:kv_cache_blocks_total", "gauge", "KV cache blocks in the pool.");
  w.sample("slimkv:kv_cache_blocks_total", labels, engine.metrics().blocks_total);
  w.family("slimkv:kv_cache_evicted_tokens_total", "counter",
           "Tokens evicted by sparse retention (whole blocks; merged into summaries under the merge policy).");
  w.sample("slimkv:kv_cache_evicted_tokens_total", labels,
           static_cast<double>(engine.kv_manager().num_evicted_blocks() * engine.kv_layout().block_size_tokens));
  if (engine.offload()) write_offload(w, *engine.offload(), labels);
  return w.text();
}

}  // namespace slimkv
