// /metrics: parsed by the official Prometheus client's parser (Debian python3-prometheus-client), vLLM's names
// under slimkv: (and vllm: on request), and counters that move as requests are served.
#include <gtest/gtest.h>

#include <cstdlib>

#include "server/server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

json parse_with_prometheus(const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string in = (dir / ("slimkv-metrics-" + std::to_string(::getpid()) + ".txt")).string();
  const std::string out = in + ".json";
  std::ofstream(in) << text;
  const std::string cmd = "/usr/bin/python3 " + repo_dir() + "/tests/server/parse_metrics.py " + in + " > " + out;
  const int rc = std::system(cmd.c_str());
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  std::filesystem::remove(in);
  std::filesystem::remove(out);
  EXPECT_EQ(rc, 0) << "the Prometheus parser rejected the exposition:\n" << text;
  return rc == 0 ? json::parse(ss.str()) : json::object();
}

double sample(const json& m, const std::string& key) {
  if (!m.contains("samples") || !m["samples"].contains(key)) {
    ADD_FAILURE() << "no sample " << key;
    return -1;
  }
  return m["samples"][key].get<double>();
}

TEST(ServerMetrics, PrometheusParserAcceptsItAndCountersMove) {
  SKIP_IF_MISSING(default_model());
  ServerProcess s({"--metrics-vllm-names"});
  const json before = parse_with_prometheus(s.get("/metrics"));
  const std::string L = "{model_name=stories260K}";
  for (const char* p : {"slimkv:", "vllm:"}) {
    for (const char* name : {"time_to_first_token_seconds", "inter_token_latency_seconds",
                             "request_time_per_output_token_seconds", "e2e_request_latency_seconds",
                             "request_queue_time_seconds", "request_prefill_time_seconds",
                             "request_decode_time_seconds"}) {
      EXPECT_EQ(before["types"][std::string(p) + name], "histogram") << p << name;
    }
    for (const char* name : {"num_requests_running", "num_requests_waiting", "kv_cache_usage_perc"}) {
      EXPECT_EQ(before["types"][std::string(p) + name], "gauge") << p << name;
    }
    for (const char* name : {"prefix_cache_queries", "prefix_cache_hits", "num_preemptions", "prompt_tokens",
                             "generation_tokens", "request_success"}) {
      EXPECT_EQ(before["types"][std::string(p) + name], "counter") << p << name;
    }
  }
  // What an inference gateway's endpoint picker reads (docs/scale-out.md): KV usage under vLLM's former name too,
  // and the block geometry as labels.
  EXPECT_EQ(before["types"]["vllm:gpu_cache_usage_perc"], "gauge");
  EXPECT_EQ(sample(before, "vllm:gpu_cache_usage_perc" + L), sample(before, "vllm:kv_cache_usage_perc" + L));
  const double blocks = sample(before, "slimkv:kv_cache_blocks_total" + L);
  EXPECT_GT(blocks, 0);
  EXPECT_EQ(sample(before, "vllm:cache_config_info{block_size=8,model_name=stories260K,num_gpu_blocks=" +
                               std::to_string(static_cast<int64_t>(blocks)) + "}"),
            1);
  EXPECT_EQ(before["types"]["slimkv:kv_cache_bytes_per_token"], "gauge");
  EXPECT_EQ(sample(before, "slimkv:kv_cache_bytes_per_token{layer=0,model_name=stories260K}"), 256);
  EXPECT_EQ(sample(before, "slimkv:kv_cache_compression_ratio{layer=4,model_name=stories260K}"), 0.5);
  // Per KV group (stories260K: one full-attention group of 5 layers, f32) and over all layers.
  EXPECT_EQ(sample(before, "slimkv:kv_cache_group_bytes_per_token{group=0,kind=full attention,model_name=stories260K}"),
            5 * 256);
  EXPECT_EQ(sample(before, "slimkv:kv_cache_group_layers{group=0,model_name=stories260K}"), 5);
  EXPECT_EQ(sample(before, "slimkv:kv_cache_group_compression_ratio{group=0,model_name=stories260K}"), 0.5);
  EXPECT_EQ(sample(before, "slimkv:kv_cache_total_bytes_per_token{model_name=stories260K}"), 5 * 256);
  EXPECT_EQ(sample(before, "slimkv:kv_cache_total_compression_ratio{model_name=stories260K}"), 0.5);
  EXPECT_GT(sample(before, "slimkv:uptime_seconds{model_name=stories260K}"), 0);

  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 10}, {"temperature", 0}};
  for (int i = 0; i < 3; ++i) ASSERT_EQ(s.post("/v1/completions", body).first, 200);
  json stream_body = body;
  stream_body["stream"] = true;
  ASSERT_EQ(s.post("/v1/completions", stream_body).first, 200);
  const json after = parse_with_prometheus(s.get("/metrics"));

  auto delta = [&](const std::string& key) { return sample(after, key) - sample(before, key); };
  EXPECT_EQ(delta("slimkv:prompt_tokens_total" + L), 4 * 5);
  EXPECT_EQ(delta("slimkv:generation_tokens_total" + L), 4 * 10);
  EXPECT_EQ(delta("slimkv:request_success_total{finished_reason=length,model_name=stories260K}"), 4);
  EXPECT_EQ(delta("slimkv:e2e_request_latency_seconds_count" + L), 4);
  EXPECT_EQ(delta("slimkv:time_to_first_token_seconds_count" + L), 4);
  EXPECT_EQ(delta("slimkv:inter_token_latency_seconds_count" + L), 4 * 9);
  EXPECT_EQ(delta("slimkv:request_time_per_output_token_seconds_count" + L), 4);
  EXPECT_GT(delta("slimkv:e2e_request_latency_seconds_sum" + L), 0);
  EXPECT_EQ(delta("slimkv:prefix_cache_queries_total" + L), 4 * 5);
  EXPECT_EQ(delta("slimkv:prefix_cache_hits_total" + L), 0) << "a 5-token prompt has no full block to reuse";
  EXPECT_EQ(delta("vllm:generation_tokens_total" + L), 4 * 10);
  EXPECT_EQ(sample(after, "slimkv:num_requests_running" + L), 0);
  EXPECT_EQ(sample(after, "slimkv:kv_cache_usage_perc" + L), 0);
}

}  // namespace
}  // namespace slimkv::test
