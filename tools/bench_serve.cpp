// `slimkv bench serve`: a load tester against any OpenAI-compatible server. Sends a production-like workload
// (Poisson / gamma arrivals, bursts, mixed lengths, shared-prefix groups) as streaming requests, then reports
// TTFT, TPOT, ITL and E2E (vLLM's definitions), throughput and goodput, the server's /metrics deltas, a health
// verdict against the seed's thresholds, a per-request JSONL file and an SVG. A benchmark, not a test.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "ops/arrival_schedule.h"
#include "ops/diagnosis.h"
#include "ops/metrics_observations.h"
#include "ops/stream_client.h"
#include "ops/svg_chart.h"
#include "tools/commands.h"

namespace slimkv {
namespace {

struct ServeBenchFlags {
  StreamTarget target{"http://127.0.0.1:8000", "", "", false, 600};
  WorkloadConfig workload;
  int32_t max_concurrency = 0;  // 0 = unlimited
  std::string slo, out, svg;
  HealthThresholds thresholds;
  bool json = false;
};

nlohmann::json dist_json(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"median", d.median}, {"p90", d.p90}, {"p99", d.p99}, {"max", d.max}};
}

int run_bench_serve(ServeBenchFlags f) {
  using clock = std::chrono::steady_clock;
  const Slo slo = f.slo.empty() ? Slo{} : parse_slo(f.slo);
  const auto plan = make_workload(f.workload);
  const PromSamples before = parse_prometheus_text(http_get(f.target, "/metrics"));
  std::vector<RequestRecord> records(plan.size());
  std::atomic<int64_t> finished{0}, failed{0}, in_flight{0};
  std::atomic<double> kv_peak{0};
  std::mutex mu;
  std::condition_variable slot;
  std::vector<std::thread> workers;
  const auto t0 = clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - t0).count(); };
  std::atomic<bool> done{false};
  std::thread poller([&] {  // KV usage peak, progress on stderr
    while (!done) {
      try {
        auto m = parse_prometheus_text(http_get(f.target, "/metrics"));
        kv_peak = std::max(kv_peak.load(), m.sum(metric_name(m, "kv_cache_usage_perc")));
      } catch (const Error&) {
      }
      std::fprintf(stderr, "\r[%6.1fs] sent %lld/%zu, in flight %lld, finished %lld, failed %lld   ", elapsed(),
                   static_cast<long long>(finished + failed + in_flight), plan.size(),
                   static_cast<long long>(in_flight.load()), static_cast<long long>(finished.load()),
                   static_cast<long long>(failed.load()));
      for (int i = 0; i < 5 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  for (size_t i = 0; i < plan.size(); ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(plan[i].at_s)));
    {
      std::unique_lock lk(mu);
      slot.wait(lk, [&] { return f.max_concurrency <= 0 || in_flight < f.max_concurrency; });
      ++in_flight;
    }
    records[i].index = static_cast<int64_t>(i);
    records[i].start_s = elapsed();
    workers.emplace_back([&, i] {
      stream_one(f.target, plan[i].prompt, plan[i].max_tokens, records[i]);
      (records[i].ok ? finished : failed)++;
      {
        std::lock_guard lk(mu);
        --in_flight;
      }
      slot.notify_one();
    });
  }
  for (auto& w : workers) w.join();
  const double duration = elapsed();
  done = true;
  poller.join();
  std::fprintf(stderr, "\n");
  const PromSamples after = parse_prometheus_text(http_get(f.target, "/metrics"));
  kv_peak = std::max(kv_peak.load(), after.sum(metric_name(after, "kv_cache_usage_perc")));

  const LoadSummary s = summarize_load(records, duration, slo);
  Observations o = observations_from_metrics(after, &before);
  o.ttft_ms = s.ttft_ms.median;  // the client's view for latency, the server's for the rest
  o.tpot_ms = s.tpot_ms.median;
  o.kv_usage_peak = kv_peak.load();
  const auto checks = health_checks(o, f.thresholds);
  const bool lost = s.num_failed > 0 || s.num_token_mismatch > 0;

  nlohmann::json j = {
      {"base_url", f.target.base_url}, {"num_requests", s.num_requests}, {"completed", s.num_ok},
      {"failed", s.num_failed}, {"token_mismatch", s.num_token_mismatch}, {"duration_s", duration},
      {"request_throughput", s.request_throughput}, {"output_token_throughput", s.output_token_throughput},
      {"total_token_throughput", s.total_token_throughput}, {"goodput", s.goodput},
      {"num_meeting_slo", s.num_meeting_slo}, {"ttft_ms", dist_json(s.ttft_ms)}, {"tpot_ms", dist_json(s.tpot_ms)},
      {"itl_ms", dist_json(s.itl_ms)}, {"e2e_ms", dist_json(s.e2e_ms)}, {"prompt_tokens", s.prompt_tokens},
      {"output_tokens", s.output_tokens}, {"cached_tokens", s.cached_tokens},
      {"server", {{"kv_usage_peak", o.kv_usage_peak.value_or(0)}, {"prefix_hit_rate", o.prefix_hit_rate.value_or(0)},
                  {"prefix_queries", o.prefix_queries.value_or(0)}, {"preemptions", o.preemptions.value_or(0)},
                  {"queue_ms_mean", o.queue_ms.value_or(0)}}}};
  nlohmann::json health = nlohmann::json::array();
  for (const auto& c : checks) {
    health.push_back({{"check", c.name}, {"value", c.value}, {"threshold", c.threshold}, {"pass", c.pass}});
  }
  j["health"] = health;
  for (const auto& r : records) {
    if (!r.ok) j["errors"].push_back({{"index", r.index}, {"error", r.error}});
  }
  if (!f.out.empty()) {
    std::ofstream out(f.out);
    for (size_t i = 0; i < records.size(); ++i) {
      const auto& r = records[i];
      out << nlohmann::json{{"index", r.index}, {"start_s", r.start_s}, {"ok", r.ok}, {"error", r.error},
                            {"ttft_ms", r.ttft_s * 1000}, {"e2e_ms", r.e2e_s * 1000}, {"tpot_ms", tpot_ms(r)},
                            {"prompt_tokens", r.prompt_tokens}, {"output_tokens", r.output_tokens},
                            {"streamed_tokens", r.streamed_tokens}, {"cached_tokens", r.cached_tokens},
                            {"prefix_group", plan[i].prefix_group}}.dump()
          << "\n";
    }
  }
  if (!f.svg.empty()) {  // latency CDFs and output tokens/s per second of the run
    std::vector<LineSeries> cdfs;
    for (auto [name, pick] : {std::pair<const char*, int>{"TTFT", 0}, {"E2E", 1}}) {
      std::vector<double> v;
      for (const auto& r : records) if (r.ok) v.push_back((pick == 0 ? r.ttft_s : r.e2e_s) * 1000);
      std::sort(v.begin(), v.end());
      LineSeries l{name, {}, false};
      for (size_t i = 0; i < v.size(); ++i) l.points.push_back({v[i], static_cast<double>(i + 1) / v.size()});
      cdfs.push_back(l);
    }
    std::vector<double> per_s(static_cast<size_t>(duration) + 1, 0);
    for (const auto& r : records) {
      for (double c : r.chunk_s) per_s[std::min(per_s.size() - 1, static_cast<size_t>(r.start_s + c))] += 1;
    }
    LineSeries tput{"output tokens/s", {}, true};
    for (size_t i = 0; i < per_s.size(); ++i) tput.points.push_back({static_cast<double>(i), per_s[i]});
    std::ofstream(f.svg) << svg_lines({"Latency CDF", "ms", "share of requests"}, cdfs);
    std::ofstream(f.svg + ".throughput.svg") << svg_lines({"Throughput over time", "s", "tokens/s"}, {tput});
    std::fprintf(stderr, "wrote %s and %s.throughput.svg\n", f.svg.c_str(), f.svg.c_str());
  }
  if (f.json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("============ Serving Benchmark Result ============\n");
    std::printf("%-40s %lld\n%-40s %lld\n%-40s %.2f\n", "Successful requests:", (long long)s.num_ok,
                "Failed requests:", (long long)s.num_failed, "Benchmark duration (s):", duration);
    std::printf("%-40s %lld\n%-40s %lld\n", "Total input tokens:", (long long)s.prompt_tokens,
                "Total generated tokens:", (long long)s.output_tokens);
    std::printf("%-40s %.2f\n%-40s %.2f\n%-40s %.2f\n", "Request throughput (req/s):", s.request_throughput,
                "Output token throughput (tok/s):", s.output_token_throughput, "Total token throughput (tok/s):",
                s.total_token_throughput);
    if (!f.slo.empty()) std::printf("%-40s %.2f\n", "Request goodput (req/s):", s.goodput);
    auto block = [](const char* title, const char* key, const Distribution& d) {
      std::printf("-------------- %s --------------\n", title);
      std::printf("Mean %s (ms): %28.2f\nMedian %s (ms): %26.2f\nP90 %s (ms): %29.2f\nP99 %s (ms): %29.2f\n", key,
                  d.mean, key, d.median, key, d.p90, key, d.p99);
    };
    block("Time to First Token", "TTFT", s.ttft_ms);
    block("Time per Output Token (excl. 1st token)", "TPOT", s.tpot_ms);
    block("Inter-token Latency", "ITL", s.itl_ms);
    block("End-to-end Latency", "E2EL", s.e2e_ms);
    std::printf("-------------- Server /metrics over the run --------------\n");
    std::printf("KV usage peak: %.1f%%, prefix hit rate: %.1f%% of %.0f tokens, preemptions: %.0f, mean queue: %.1f ms\n",
                100 * o.kv_usage_peak.value_or(0), 100 * o.prefix_hit_rate.value_or(0), o.prefix_queries.value_or(0),
                o.preemptions.value_or(0), o.queue_ms.value_or(0));
    std::printf("-------------- Health (seed 4.4 thresholds) --------------\n");
    for (const auto& c : checks) {
      std::printf("%-4s %-24s %10.3g %s (%s %g)\n", c.pass ? "PASS" : "WARN", c.name.c_str(), c.value,
                  c.unit.c_str(), c.below ? "<" : ">", c.threshold);
    }
    std::printf("%s\n", lost ? "LOST: some requests failed or streamed a token count different from usage"
                             : "no request lost; streamed tokens equal usage for every request");
  }
  return lost ? 1 : 0;
}

}  // namespace

void add_bench_serve_command(CLI::App& bench, std::vector<Command>& out) {
  auto f = std::make_shared<ServeBenchFlags>();
  auto* sub = bench.add_subcommand("serve", "Load-test a running OpenAI-compatible server (streaming)");
  sub->add_option("--base-url", f->target.base_url, "Server URL (default http://127.0.0.1:8000)");
  sub->add_option("--api-key", f->target.api_key, "Bearer key");
  sub->add_option("--model", f->target.model, "Model name to send (default: none)");
  sub->add_flag("--chat", f->target.chat, "Use /v1/chat/completions (default /v1/completions)");
  sub->add_option("--request-timeout", f->target.timeout_s, "Per-request timeout, s");
  WorkloadConfig& w = f->workload;
  sub->add_option("--num-prompts", w.num_prompts, "Requests to send");
  sub->add_option("--duration", w.duration_s, "Or: send for this many seconds");
  sub->add_option("--request-rate", w.request_rate, "Requests/s (0 = all at once)");
  sub->add_option("--burstiness", w.burstiness, "Gamma shape of inter-arrival times (1 = Poisson)");
  sub->add_option("--burst-at", w.burst_at_s, "A burst starting at this second");
  sub->add_option("--burst-rate", w.burst_rate, "Extra requests/s during the burst (2 s)");
  sub->add_option("--max-concurrency", f->max_concurrency, "Requests in flight at most (0 = unlimited)");
  sub->add_option("--input-len-min", w.input_len_min, "Prompt words, minimum (synthetic or text dataset)");
  sub->add_option("--input-len-max", w.input_len_max, "Prompt words, maximum");
  sub->add_option("--output-len", w.output_len, "Generated tokens per request (max_tokens + ignore_eos)");
  sub->add_option("--prefix-groups", w.prefix_groups, "Shared-prefix groups");
  sub->add_option("--prefix-len", w.prefix_len, "Shared prefix length in words");
  sub->add_option("--dataset", w.dataset, "Prompts: a text file, or JSONL with \"prompt\" or \"text\"");
  sub->add_option("--seed", w.seed, "Workload seed");
  sub->add_option("--slo", f->slo, "Goodput SLO, e.g. ttft:500,tpot:50,e2e:10000 (ms)");
  sub->add_option("--threshold-ttft", f->thresholds.ttft_ms, "Health: TTFT below, ms (500)");
  sub->add_option("--threshold-tpot", f->thresholds.tpot_ms, "Health: TPOT below, ms (50)");
  sub->add_option("--threshold-memory", f->thresholds.memory_use, "Health: peak KV usage below (0.85)");
  sub->add_option("--threshold-hit-rate", f->thresholds.cache_hit_rate, "Health: prefix hit rate above (0.60)");
  sub->add_option("--threshold-queue", f->thresholds.queue_ms, "Health: queue time below, ms (200)");
  sub->add_option("--out", f->out, "Per-request JSONL");
  sub->add_option("--svg", f->svg, "Latency CDFs (and FILE.throughput.svg)");
  sub->add_flag("--json", f->json, "Print the report as JSON");
  out.push_back({sub, [f] { return run_bench_serve(*f); }});
}

}  // namespace slimkv
