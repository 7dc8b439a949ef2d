// `slimkv bench offline`: a synthetic (or file-based) workload through the batching engine in-process; prints
// throughput, TTFT/TPOT/ITL percentiles, peak KV usage, prefix hit rate and preemptions. A benchmark, not a test.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/engine.h"
#include "tools/bench_long.h"
#include "tools/commands.h"
#include "tools/common.h"
#include "tools/step_follow.h"
#include "tools/prompts_file.h"

namespace slimkv {
namespace {

struct OfflineFlags {
  ModelFlags model;
  EngineConfig engine;
  LongContextFlags long_ctx;
  int32_t num_prompts = 64, input_len = 128, output_len = 128, shared_prefix_len = 0;
  double request_rate = 0;  // requests/s, Poisson; 0 = all at once
  std::string prompts_file;
  uint64_t seed = 0;
  float temperature = 0;  // 0: greedy; else each request sampled with its index as seed
  bool json = false;
};

struct Arrival {
  double at_ms;
  std::vector<int32_t> prompt;
  int32_t max_tokens;
};

std::vector<Arrival> make_workload(const OfflineFlags& f, const Model& m) {
  std::mt19937_64 rng(f.seed);
  std::vector<Arrival> w;
  if (!f.prompts_file.empty()) {
    for (auto& p : read_prompts_file(f.prompts_file, f.output_len)) {
      auto ids = m.tokenizer->encode(p.text, true);
      w.push_back({0, ids, p.max_tokens});
    }
  } else {
    const int32_t vocab = m.config.vocab_size;
    auto random_token = [&] { return 3 + static_cast<int32_t>(rng() % (vocab - 3)); };
    std::vector<int32_t> prefix;
    for (int32_t i = 0; i < f.shared_prefix_len; ++i) prefix.push_back(random_token());
    for (int32_t i = 0; i < f.num_prompts; ++i) {
      std::vector<int32_t> p = {m.tokenizer ? m.tokenizer->bos_id() : 1};
      p.insert(p.end(), prefix.begin(), prefix.end());
      while (static_cast<int32_t>(p.size()) < f.input_len) p.push_back(random_token());
      w.push_back({0, std::move(p), f.output_len});
    }
  }
  if (f.request_rate > 0) {
    std::exponential_distribution<double> gap(f.request_rate);
    double t = 0;
    for (auto& a : w) {
      a.at_ms = t;
      t += gap(rng) * 1000.0;
    }
  }
  return w;
}

nlohmann::json summary_json(const LatencySummary& s) {
  return {{"mean", s.mean}, {"median", s.median}, {"p90", s.p90}, {"p99", s.p99}};
}

int run_offline(OfflineFlags f) {
  if (f.long_ctx.context_len > 0) {
    SLIMKV_CHECK(f.model.tensor_parallel_size == 1, "bench offline --context-len runs on one process (drop "
                 "--tensor-parallel-size)");
    f.long_ctx.json = f.json;
    f.long_ctx.output_len = f.output_len;
    f.long_ctx.seed = f.seed;
    return run_long_context(f.long_ctx, f.model, f.engine);
  }
  require_kv_budget(f.model.tensor_parallel_size, f.engine, "bench offline");
  auto model = load_model_from_flags(f.model);
  f.engine.threads = resolve_threads(f.model.threads);
  Engine engine(*model, f.engine);
  if (follow_unless_leader(engine, *model)) return 0;  // tensor parallelism: rank 0 schedules
  if (!f.json) std::fprintf(stderr, "%s\n", describe_plan(engine.kv_layout()).c_str());
  auto work = make_workload(f, *model);
  RequestParams params;
  params.ignore_eos = true;  // fixed output lengths
  const bool progress = ::isatty(2) && !f.json;
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(); };
  size_t next = 0, done = 0, rejected = 0;
  while (next < work.size() || engine.has_unfinished()) {
    while (next < work.size() && work[next].at_ms <= elapsed_ms()) {
      params.max_tokens = work[next].max_tokens;
      params.sampling.temperature = f.temperature;
      params.sampling.seed = next;
      auto r = engine.add_request(work[next].prompt, params);
      if (std::holds_alternative<std::string>(r)) {
        std::fprintf(stderr, "request %zu refused: %s\n", next, std::get<std::string>(r).c_str());
        ++rejected;
      }
      ++next;
    }
    if (!engine.has_unfinished()) {  // idle until the next arrival
      ::usleep(200);
      continue;
    }
    for (const auto& ev : engine.step()) done += ev.finish != FinishReason::None;
    if (progress) std::fprintf(stderr, "\r%zu/%zu requests done", done, work.size());
  }
  if (progress) std::fprintf(stderr, "\n");
  finish_leading(engine, *model);  // a disk tier's cached blocks, every rank's part, before the other ranks stop
  const double secs = elapsed_ms() / 1000.0;
  const Metrics& m = engine.metrics();
  const double out_tps = m.generation_tokens / secs;
  const double decode_tps = m.decode_step_ms > 0 ? m.decode_tokens / (m.decode_step_ms / 1000.0) : 0;
  nlohmann::json j = {
      {"model", model->path}, {"num_prompts", work.size()}, {"rejected", rejected}, {"duration_s", secs},
      {"block_size", engine.config().cache.block_size}, {"max_num_seqs", engine.config().sched.max_num_seqs},
      {"requests_per_s", m.num_finished / secs}, {"output_tokens_per_s", out_tps},
      {"total_tokens_per_s", (m.prompt_tokens + m.generation_tokens) / secs},
      {"decode_tokens_per_s", decode_tps},
      {"ttft_ms", summary_json(summarize(m.ttft_ms))}, {"tpot_ms", summary_json(summarize(m.tpot_ms))},
      {"itl_ms", summary_json(summarize(m.itl_ms))}, {"e2e_ms", summary_json(summarize(m.e2e_ms))},
      {"kv_usage_peak", m.kv_usage_peak}, {"kv_blocks", m.blocks_total}, {"kv_bytes", engine.kv_bytes()},
      {"kv_bytes_per_token", engine.kv_layout().bytes_per_token()}, {"peak_concurrent_seqs", m.num_running_peak},
      {"prefix_hit_rate", m.prefix_hit_rate()}, {"preemptions", m.num_preemptions},
      {"spec_drafts", m.spec_drafts}, {"spec_draft_tokens", m.spec_draft_tokens},
      {"spec_accepted_tokens", m.spec_accepted_tokens},
      {"spec_acceptance", m.spec_draft_tokens > 0 ? static_cast<double>(m.spec_accepted_tokens) / m.spec_draft_tokens
                                                  : 0.0}};
  if (f.json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  auto row = [](const char* name, const LatencySummary& s) {
    std::printf("%-10s mean %8.2f  median %8.2f  p90 %8.2f  p99 %8.2f ms\n", name, s.mean, s.median, s.p90, s.p99);
  };
  std::printf("requests: %zu finished in %.2f s (%.2f req/s), %zu refused\n", static_cast<size_t>(m.num_finished),
              secs, m.num_finished / secs, rejected);
  std::printf("throughput: %.1f output tokens/s, %.1f total tokens/s, decode-only steps %.1f tokens/s\n", out_tps,
              (m.prompt_tokens + m.generation_tokens) / secs, decode_tps);
  row("TTFT", summarize(m.ttft_ms));
  row("TPOT", summarize(m.tpot_ms));
  row("ITL", summarize(m.itl_ms));
  row("E2E", summarize(m.e2e_ms));
  std::printf("KV: peak usage %.1f%% of %d blocks (block size %d), prefix hit rate %.1f%%, preemptions %lld\n",
              100 * m.kv_usage_peak, m.blocks_total, engine.config().cache.block_size, 100 * m.prefix_hit_rate(),
              static_cast<long long>(m.num_preemptions));
  if (m.spec_drafts > 0) {
    std::printf("speculative: %lld verify chunks, %lld tokens drafted, %lld accepted (%.2f)\n",
                static_cast<long long>(m.spec_drafts), static_cast<long long>(m.spec_draft_tokens),
                static_cast<long long>(m.spec_accepted_tokens),
                static_cast<double>(m.spec_accepted_tokens) / static_cast<double>(m.spec_draft_tokens));
  }
  return 0;
}

}  // namespace

void add_bench_offline_command(CLI::App& bench, std::vector<Command>& out) {
  auto f = std::make_shared<OfflineFlags>();
  auto* sub = bench.add_subcommand("offline", "Batched workload through the engine: throughput and latency");
  add_model_flags(sub, f->model);
  add_parallel_flags(sub, f->model);
  add_engine_flags(sub, f->engine);
  sub->add_option("--num-prompts", f->num_prompts, "Requests")->check(CLI::Range(1, 1 << 20));
  sub->add_option("--input-len", f->input_len, "Prompt tokens (BOS included)")->check(CLI::Range(1, 1 << 24));
  sub->add_option("--output-len", f->output_len, "Output tokens per request")->check(CLI::Range(1, 1 << 24));
  sub->add_option("--shared-prefix-len", f->shared_prefix_len, "Tokens every prompt shares after BOS")
      ->check(CLI::Range(0, 1 << 24));
  sub->add_option("--request-rate", f->request_rate, "Poisson arrivals per second (0 = all at once)")
      ->check(CLI::Range(0.0, 1e9));
  sub->add_option("--prompts-file", f->prompts_file, "Prompts: one per line, or JSONL with prompt/max_tokens");
  sub->add_option("--seed", f->seed, "Workload seed");
  sub->add_option("--temperature", f->temperature, "Sampling temperature (0: greedy; request i seeded with i)")
      ->check(CLI::Range(0.0, 100.0));
  sub->add_option("--context-len", f->long_ctx.context_len, "Long-context mode: tokens already in each sequence")
      ->check(CLI::Range(0, 1 << 24));
  sub->add_option("--batch", f->long_ctx.batch, "Long-context mode: sequences decoding together")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--config", f->long_ctx.configs, "Long-context mode: compression configs beside the baseline");
  sub->add_option("--fill", f->long_ctx.fill, "Long-context mode: real (prefill) | synthetic (random K/V)");
  sub->add_option("--synthetic", f->long_ctx.synthetic, "Random-weight shape: llama-15m | llama-110m | llama-1b | deepseek-v2-lite (MLA)");
  sub->add_option("--dtype", f->long_ctx.dtype, "Weights dtype of --synthetic: f32 | f16 | q8_0 | q4_0");
  sub->add_flag("--json", f->json, "Print one JSON object");
  out.push_back({sub, [f] { return run_offline(*f); }});
}

}  // namespace slimkv
