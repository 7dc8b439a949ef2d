// `slimkv doctor`: the seed's troubleshooting table (5.4) as a command. Reads a running server's /metrics, a
// `bench serve --json` report, an `eval --json` report and/or a configuration, and prints health checks and
// findings (symptom -> cause -> action), each citing the measured value it rests on.
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "ops/config_lint.h"
#include "ops/metrics_observations.h"
#include "ops/stream_client.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct DoctorFlags {
  StreamTarget target;
  std::string bench_report, eval_report, profile_report;
  ModelFlags model;
  EngineConfig engine;
  bool check_config = false, json = false;
  HealthThresholds thresholds;
};

nlohmann::json read_json(const std::string& path) {
  auto j = nlohmann::json::parse(read_text_file(path), nullptr, false);
  SLIMKV_CHECK(!j.is_discarded(), "{}: not JSON", path);
  return j;
}

int run_doctor(DoctorFlags f) {
  Observations o;
  std::vector<std::string> sources;
  if (!f.target.base_url.empty()) {
    o = observations_from_metrics(parse_prometheus_text(http_get(f.target, "/metrics")), nullptr);
    sources.push_back(f.target.base_url + "/metrics (since the server started)");
  }
  if (!f.bench_report.empty()) {
    const auto j = read_json(f.bench_report);
    SLIMKV_CHECK(j.contains("ttft_ms") && j.contains("server"), "{}: not a `bench serve --json` report", f.bench_report);
    o.ttft_ms = j["ttft_ms"]["median"].get<double>();
    o.tpot_ms = j["tpot_ms"]["median"].get<double>();
    o.kv_usage_peak = j["server"]["kv_usage_peak"].get<double>();
    o.prefix_hit_rate = j["server"]["prefix_hit_rate"].get<double>();
    o.prefix_queries = j["server"]["prefix_queries"].get<double>();
    o.preemptions = j["server"]["preemptions"].get<double>();
    o.queue_ms = j["server"]["queue_ms_mean"].get<double>();
    sources.push_back(f.bench_report + " (bench serve: client-side medians)");
  }
  if (!f.eval_report.empty()) {
    const auto j = read_json(f.eval_report);
    SLIMKV_CHECK(j.is_array() && !j.empty(), "{}: not an `eval --json` report", f.eval_report);
    double worst = 1;
    for (const auto& row : j) worst = std::min(worst, row.value("top1_agreement", 1.0));
    o.top1_agreement = worst;
    sources.push_back(f.eval_report + " (eval: the worst configuration)");
  }
  if (!f.profile_report.empty()) {
    const auto j = read_json(f.profile_report);
    SLIMKV_CHECK(j.contains("decode") && j["decode"].contains("sparse_share"), "{}: not a `profile --json` report",
                 f.profile_report);
    o.sparse_share = j["decode"]["sparse_share"].get<double>();
    const char* kCollectives = "collectives (all-reduce between ranks)";
    if (j.contains("collectives") && j["decode"]["kinds"].contains(kCollectives)) {
      o.collective_share = j["decode"]["kinds"][kCollectives]["share"].get<double>();
    }
    sources.push_back(f.profile_report + " (profile)");
  }
  std::vector<Finding> findings = diagnose(o, f.thresholds);
  if (f.check_config) {
    auto model = load_model_from_flags(f.model);
    if (!f.engine.kv_config_file.empty()) f.engine.compress = CompressionConfig::from_json_file(f.engine.kv_config_file);
    for (auto& x : lint_config(f.engine, model->config)) findings.push_back(x);
    sources.push_back("configuration for " + model->path);
  }
  SLIMKV_CHECK(!sources.empty(), "nothing to examine: give --base-url, --bench-report, --eval-report, "
               "--profile-report or --check-config");
  const auto checks = health_checks(o, f.thresholds);
  if (f.json) {
    nlohmann::json j = {{"sources", sources}, {"checks", nlohmann::json::array()}, {"findings", nlohmann::json::array()}};
    for (const auto& c : checks) j["checks"].push_back({{"check", c.name}, {"value", c.value}, {"threshold", c.threshold}, {"pass", c.pass}});
    for (const auto& x : findings) {
      j["findings"].push_back({{"symptom", x.symptom}, {"cause", x.cause}, {"action", x.action}, {"evidence", x.evidence}});
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("slimkv doctor — examined:\n");
  for (const auto& s : sources) std::printf("  %s\n", s.c_str());
  if (!checks.empty()) std::printf("\nhealth (seed 4.4 thresholds):\n");
  for (const auto& c : checks) {
    std::printf("  %-4s %-24s %10.3g %s (%s %g)\n", c.pass ? "PASS" : "WARN", c.name.c_str(), c.value, c.unit.c_str(),
                c.below ? "<" : ">", c.threshold);
  }
  std::printf("\n%s\n", findings.empty() ? "no findings: nothing in the troubleshooting table applies" : "findings:");
  for (const auto& x : findings) {
    std::printf("  * %s — %s\n    measured: %s\n    action:   %s\n", x.symptom.c_str(), x.cause.c_str(),
                x.evidence.c_str(), x.action.c_str());
  }
  return 0;
}

}  // namespace

void add_doctor_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<DoctorFlags>();
  auto* sub = app.add_subcommand("doctor", "Troubleshooting table: symptoms -> causes -> actions, from measurements");
  sub->add_option("--base-url", f->target.base_url, "A running server: read its /metrics");
  sub->add_option("--api-key", f->target.api_key, "Bearer key for --base-url");
  sub->add_option("--bench-report", f->bench_report, "A `bench serve --json` report");
  sub->add_option("--eval-report", f->eval_report, "An `eval --json` report");
  sub->add_option("--profile-report", f->profile_report, "A `profile --json` report");
  sub->add_flag("--check-config", f->check_config, "Check the engine/compression flags (or --kv-config) against -m");
  add_model_flags(sub, f->model);
  add_engine_flags(sub, f->engine);
  sub->add_flag("--json", f->json, "Print JSON");
  out.push_back({sub, [f] { return run_doctor(*f); }});
}

}  // namespace slimkv
