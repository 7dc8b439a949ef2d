// bench serve's pieces on synthetic data (vLLM's TTFT/TPOT/ITL/goodput definitions, workloads, /metrics parsing)
// and the diagnosis rules; then the real `bench serve` against the real `slimkv serve`.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/check.h"
#include "ops/arrival_schedule.h"
#include "ops/diagnosis.h"
#include "ops/latency_stats.h"
#include "ops/metrics_observations.h"
#include "server/server_process.h"

namespace slimkv::test {
namespace {

RequestRecord rec(double ttft, std::vector<double> chunks, double e2e, int64_t out) {
  RequestRecord r;
  r.ok = true;
  r.ttft_s = ttft;
  r.chunk_s = std::move(chunks);
  r.e2e_s = e2e;
  r.output_tokens = out;
  r.streamed_tokens = static_cast<int64_t>(r.chunk_s.size());
  r.prompt_tokens = 10;
  return r;
}

TEST(LatencyStats, VllmDefinitionsOnASyntheticTrace) {
  // A: TTFT 100 ms, chunks at 0.1 0.2 0.4 (gaps 100, 200), E2E 0.5 s, 3 tokens -> TPOT (500-100)/2 = 200 ms.
  // B: TTFT 300 ms, one token, E2E 0.3 s -> no TPOT, no ITL.
  std::vector<RequestRecord> rs = {rec(0.1, {0.1, 0.2, 0.4}, 0.5, 3), rec(0.3, {0.3}, 0.3, 1)};
  RequestRecord failed;
  failed.error = "HTTP 500";
  rs.push_back(failed);
  LoadSummary s = summarize_load(rs, 2.0, parse_slo("ttft:200,tpot:250"));
  EXPECT_EQ(s.num_ok, 2);
  EXPECT_EQ(s.num_failed, 1);
  EXPECT_DOUBLE_EQ(s.ttft_ms.mean, 200);
  EXPECT_DOUBLE_EQ(s.ttft_ms.median, 100);
  EXPECT_EQ(s.tpot_ms.count, 1);
  EXPECT_NEAR(s.tpot_ms.mean, 200, 1e-9);
  EXPECT_EQ(s.itl_ms.count, 2);
  EXPECT_NEAR(s.itl_ms.mean, 150, 1e-9);
  EXPECT_NEAR(s.itl_ms.max, 200, 1e-9);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(s.output_token_throughput, 2.0);
  EXPECT_EQ(s.num_meeting_slo, 1) << "B misses the TTFT SLO; A meets both";
  EXPECT_DOUBLE_EQ(s.goodput, 0.5);
  rs[0].streamed_tokens = 2;
  EXPECT_EQ(summarize_load(rs, 2.0, {}).num_token_mismatch, 1);
  EXPECT_THROW(parse_slo("ttft=5"), Error);
  EXPECT_THROW(parse_slo("latency:5"), Error);
}

TEST(Workload, SeededPoissonArrivalsPrefixGroupsAndBursts) {
  WorkloadConfig c;
  c.num_prompts = 2000;
  c.request_rate = 10;
  c.prefix_groups = 3;
  c.prefix_len = 5;
  c.seed = 42;
  auto w = make_workload(c);
  ASSERT_EQ(w.size(), 2000u);
  EXPECT_NEAR(w.back().at_s / 2000, 0.1, 0.01) << "mean gap 1/rate";
  EXPECT_EQ(make_workload(c)[7].prompt, w[7].prompt) << "seeded";
  EXPECT_EQ(w[1].prefix_group, 1);
  auto first_words = [](const std::string& p, int n) {
    size_t at = 0;
    for (int i = 0; i < n; ++i) at = p.find(' ', at) + 1;
    return p.substr(0, at);
  };
  EXPECT_EQ(first_words(w[0].prompt, 5), first_words(w[3].prompt, 5)) << "same group, same prefix";
  EXPECT_NE(first_words(w[0].prompt, 5), first_words(w[1].prompt, 5)) << "another group";
  c.num_prompts = 0;
  c.duration_s = 10;
  c.burst_at_s = 4;
  c.burst_rate = 90;
  int in_burst = 0;
  for (const auto& r : make_workload(c)) in_burst += r.at_s >= 4 && r.at_s < 6;
  EXPECT_GT(in_burst, 120) << "about 100 requests/s for 2 s";
  c.input_len_min = 0;
  EXPECT_THROW(make_workload(c), Error);
}

TEST(Diagnosis, SymptomsMapToCausesCitingTheMeasuredValue) {
  Observations healthy;
  healthy.ttft_ms = 120;
  healthy.tpot_ms = 8;
  healthy.kv_usage_peak = 0.5;
  healthy.prefix_hit_rate = 0.7;
  healthy.prefix_queries = 1000;
  healthy.queue_ms = 5;
  healthy.preemptions = 0;
  healthy.kv_compression_ratio = 4;
  healthy.collective_share = 0.04;  // 2 ranks over shared memory (docs/scale-out.md)
  healthy.tier_read_ms_per_token = 0.002;  // a restored token vs a computed one (docs/performance.md "Issue T")
  healthy.prefill_ms_per_token = 0.27;
  const HealthThresholds t;
  EXPECT_TRUE(diagnose(healthy, t).empty());
  for (const auto& c : health_checks(healthy, t)) EXPECT_TRUE(c.pass) << c.name;

  Observations sick = healthy;
  sick.ttft_ms = 900;
  sick.prefix_hit_rate = 0.2;
  sick.preemptions = 3;
  sick.sparse_share = 0.35;
  sick.collective_share = 0.44;
  sick.top1_agreement = 0.95;
  sick.kv_compression_ratio = 1.0;
  sick.tier_read_ms_per_token = 0.5;
  sick.prefill_ms_per_token = 0.25;
  std::map<std::string, std::string> found;
  for (const auto& f : diagnose(sick, t)) found[f.symptom] = f.evidence;
  EXPECT_EQ(found["TTFT spike"], "TTFT 900 ms >= 500 ms while TPOT is fine");
  EXPECT_EQ(found["low cache hit rate"], "prefix hit rate 20.0% < 60%");
  EXPECT_EQ(found["throughput down"], "sparse-index share of decode 35.0% > 20%");
  EXPECT_EQ(found["multi-rank communication bottleneck"], "collectives' share of decode 44.0% > 30%");
  EXPECT_EQ(found["quality drop"], "top-1 agreement 95.00% < 99.00%");
  EXPECT_EQ(found["memory not down"], "compression ratio vs f16 1.00");
  EXPECT_EQ(found["preemptions"], "3 preemptions");
  EXPECT_EQ(found["disk tier slower than recompute"], "tier read 0.500 ms per token >= prefill 0.250 ms per token");
  EXPECT_EQ(found.count("TPOT high"), 0u);
  int warns = 0;
  for (const auto& c : health_checks(sick, t)) warns += !c.pass;
  EXPECT_EQ(warns, 2);  // TTFT and hit rate
}

TEST(Diagnosis, ObservationsFromMetricsUseTheWindowsDelta) {
  const std::string a = "slimkv:time_to_first_token_seconds_sum{model_name=\"m\"} 1\n"
                        "slimkv:time_to_first_token_seconds_count{model_name=\"m\"} 10\n"
                        "slimkv:prefix_cache_queries_total{model_name=\"m\"} 100\n"
                        "slimkv:prefix_cache_hits_total{model_name=\"m\"} 0\n";
  const std::string b = "# HELP x y\nslimkv:time_to_first_token_seconds_sum{model_name=\"m\"} 3\n"
                        "slimkv:time_to_first_token_seconds_count{model_name=\"m\"} 14\n"
                        "slimkv:prefix_cache_queries_total{model_name=\"m\"} 300\n"
                        "slimkv:prefix_cache_hits_total{model_name=\"m\"} 150\n"
                        "slimkv:kv_cache_usage_perc{model_name=\"m\"} 0.25\n"
                        "slimkv:kv_cache_compression_ratio{model_name=\"m\",layer=\"0\"} 2\n"
                        "slimkv:kv_cache_compression_ratio{model_name=\"m\",layer=\"1\"} 4\n";
  const PromSamples before = parse_prometheus_text(a), now = parse_prometheus_text(b);
  Observations o = observations_from_metrics(now, &before);
  EXPECT_DOUBLE_EQ(*o.ttft_ms, 500.0);  // 2 s over 4 requests
  EXPECT_DOUBLE_EQ(*o.prefix_hit_rate, 0.75);
  EXPECT_DOUBLE_EQ(*o.kv_usage_peak, 0.25);
  EXPECT_DOUBLE_EQ(*o.kv_compression_ratio, 3.0);
  EXPECT_DOUBLE_EQ(parse_prometheus_text("vllm:x_total 5\n").sum("vllm:x_total"), 5);
}

TEST(BenchServe, AgainstTheRealServerLosesNothing) {
  SKIP_IF_MISSING(default_model());
  ServerProcess s;
  const auto jsonl = std::filesystem::temp_directory_path() / ("slimkv-bench-" + std::to_string(::getpid()) + ".jsonl");
  int rc = 0;
  const std::string out = run_tool("bench serve --base-url " + s.base_url() +
                                          " --num-prompts 24 --request-rate 40 --output-len 12 --prefix-groups 2"
                                          " --prefix-len 30 --input-len-max 40 --slo ttft:5000 --json --out " +
                                          jsonl.string(),
                                      &rc);
  EXPECT_EQ(rc, 0) << out;
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << out;
  EXPECT_EQ(j["num_requests"], 24);
  EXPECT_EQ(j["completed"], 24);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["token_mismatch"], 0);
  EXPECT_EQ(j["output_tokens"], 24 * 12);
  EXPECT_EQ(j["ttft_ms"]["count"], 24);
  EXPECT_EQ(j["tpot_ms"]["count"], 24);
  EXPECT_EQ(j["itl_ms"]["count"], 24 * 11);
  EXPECT_GT(j["output_token_throughput"].get<double>(), 0);
  EXPECT_GT(j["server"]["prefix_hit_rate"].get<double>(), 0) << "shared-prefix groups hit the prefix cache";
  EXPECT_EQ(j["health"].size(), 5u);
  std::ifstream in(jsonl);
  int lines = 0;
  for (std::string line; std::getline(in, line);) {
    auto r = nlohmann::json::parse(line);
    EXPECT_TRUE(r["ok"].get<bool>());
    EXPECT_EQ(r["streamed_tokens"], r["output_tokens"]);
    ++lines;
  }
  EXPECT_EQ(lines, 24);
  std::filesystem::remove(jsonl);
}

}  // namespace
}  // namespace slimkv::test
