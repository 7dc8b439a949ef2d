// `slimkv eval`: the full-cache baseline and each compression config on the same token windows, tokenizer and
// (greedy) sampling, compression applied while scoring (ops/quality_eval.h). Prints a markdown table or JSON.
#include <algorithm>
#include <tuple>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "model/kv_projection.h"
#include "ops/quality_eval.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct EvalFlags {
  ModelFlags model;
  std::string data, passkey, passkey_out;
  std::vector<std::string> configs;
  int32_t ctx = 0, max_tokens = 4096, max_passkey = 30, block_size = 16, prefill_chunk = 0, score_from = 0;
  bool json = false;
};

// Passkey counts per group ("<kind>@<context_tokens>"), groups in first-seen order: [(group, right, total)].
std::vector<std::tuple<std::string, int32_t, int32_t>> passkey_groups(const QualityResult& r) {
  std::vector<std::tuple<std::string, int32_t, int32_t>> out;
  for (const PasskeyCase& pc : r.passkey_cases) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& g) { return std::get<0>(g) == pc.group; });
    if (it == out.end()) it = out.insert(out.end(), {pc.group, 0, 0});
    std::get<1>(*it) += pc.got == pc.answer;
    ++std::get<2>(*it);
  }
  return out;
}

void print_passkey_groups(const std::vector<QualityResult>& results) {
  const auto head = passkey_groups(results[0]);
  if (head.size() < 2) return;
  std::printf("\n| config |");
  for (const auto& g : head) std::printf(" %s |", std::get<0>(g).c_str());
  std::printf("\n|---|");
  for (size_t i = 0; i < head.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (const auto& r : results) {
    std::printf("| %s |", r.name.c_str());
    for (const auto& g : passkey_groups(r)) std::printf(" %d/%d |", std::get<1>(g), std::get<2>(g));
    std::printf("\n");
  }
}

void write_passkey_cases(const std::string& path, const std::vector<QualityResult>& results) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  SLIMKV_CHECK(out != nullptr, "cannot write '{}'", path);
  for (const auto& r : results) {
    for (const PasskeyCase& pc : r.passkey_cases) {
      nlohmann::json j = {{"config", r.name}, {"group", pc.group}, {"answer", pc.answer}, {"got", pc.got},
                          {"right", pc.got == pc.answer}, {"prompt_ids", pc.prompt_ids},
                          {"out_ids", pc.out_ids}};
      std::fprintf(out, "%s\n", j.dump().c_str());
    }
  }
  std::fclose(out);
}

nlohmann::json row_json(const QualityResult& r) {
  nlohmann::json groups = nlohmann::json::object();
  for (const auto& [name, right, total] : passkey_groups(r)) groups[name] = {right, total};
  return {{"passkey_groups", groups}, {"config", r.name}, {"kv_bytes_per_token", r.kv_bytes_per_token}, {"ratio_vs_f16", r.ratio_vs_f16},
          {"mean_kl", r.mean_kl}, {"p99_kl", r.p99_kl}, {"top1_agreement", r.top1_agreement},
          {"perplexity", r.perplexity}, {"ppl_change", r.ppl_change}, {"passkey_right", r.passkey_right},
          {"passkey_total", r.passkey_total}, {"tokens_per_s", r.tokens_per_s}, {"read_fraction", r.read_fraction},
          {"read_bytes_vs_f16", r.read_bytes_vs_f16}, {"predictions", r.predictions},
          {"passkey_read_fraction", r.passkey_read_fraction}};
}

int run_eval(const EvalFlags& f) {
  auto model = load_model_from_flags(f.model);
  const ModelConfig& c = model->config;
  const int32_t ctx = f.ctx > 0 ? std::min(f.ctx, c.max_seq_len) : c.max_seq_len;
  std::vector<int32_t> ids = model->tokenizer->encode(read_text_file(f.data), true);
  if (static_cast<int32_t>(ids.size()) > f.max_tokens) ids.resize(f.max_tokens);
  ThreadPool pool(resolve_threads(f.model.threads));
  QualityEvaluator ev(*model, &pool, ids, ctx, f.passkey, f.max_passkey, f.block_size, f.prefill_chunk,
                      f.score_from);
  std::vector<QualityResult> results = {ev.baseline()};
  for (const auto& path : f.configs) {
    const CompressionConfig cc = CompressionConfig::from_json_file(path);
    if (!f.json) {
      std::fprintf(stderr, "[%s]\n%s\n", path.c_str(),
                   describe_plan(model_kv_layout(*model, f.block_size, cc)).c_str());
    }
    results.push_back(ev.evaluate(path, cc));
  }
  nlohmann::json rows = nlohmann::json::array();
  if (!f.json) {
    std::printf("model %s, %zu windows of <= %d tokens (%lld predictions), greedy\n", model->path.c_str(),
                ev.num_windows(), ctx, static_cast<long long>(results[0].predictions));
    std::printf("| config | KV bytes/token | vs f16 | mean KL | p99 KL | top-1 agree | ppl | ppl change | passkey | "
                "read | read bytes vs f16 | tokens/s |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  }
  for (const auto& r : results) {
    rows.push_back(row_json(r));
    if (f.json) continue;
    std::string pk = r.passkey_total ? fmt::format("{}/{} (read {:.3f})", r.passkey_right, r.passkey_total,
                                                   r.passkey_read_fraction)
                                     : "-";
    std::printf("| %s | %lld | %.1f%% | %.5f | %.4f | %.2f%% | %.4f | %+.2f%% | %s | %.3f | %.3f | %.0f |\n",
                r.name.c_str(), static_cast<long long>(r.kv_bytes_per_token), 100 * r.ratio_vs_f16, r.mean_kl,
                r.p99_kl, 100 * r.top1_agreement, r.perplexity, 100 * r.ppl_change, pk.c_str(), r.read_fraction,
                r.read_bytes_vs_f16, r.tokens_per_s);
  }
  if (f.json) std::printf("%s\n", rows.dump().c_str());
  if (!f.json) print_passkey_groups(results);
  if (!f.passkey_out.empty()) write_passkey_cases(f.passkey_out, results);
  return 0;
}

}  // namespace

void add_eval_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<EvalFlags>();
  auto* sub = app.add_subcommand("eval", "Compressed vs full KV cache quality on the same windows");
  add_model_flags(sub, f->model);
  sub->add_option("--data", f->data, "Text file to score")->required();
  sub->add_option("--config", f->configs, "Compression config JSON files (configs/*.json)");
  sub->add_option("--passkey", f->passkey, "Passkey JSONL (prompt, answer), e.g. ../shared/data/passkey-kjv.jsonl");
  sub->add_option("--passkey-out", f->passkey_out, "Write each passkey case's outcome per config (JSONL)");
  sub->add_option("--max-passkey", f->max_passkey, "Passkey prompts to run per config")->check(CLI::Range(0, 100000));
  sub->add_option("--ctx", f->ctx, "Window length (default: the model's context)")->check(CLI::Range(0, 1 << 24));
  sub->add_option("--max-tokens", f->max_tokens, "Tokens of the text to score")->check(CLI::Range(2, 1 << 30));
  sub->add_option("--block-size", f->block_size, "KV block tokens: the eviction granularity (default 16)")
      ->check(CLI::Range(1, 256));
  sub->add_option("--prefill-chunk", f->prefill_chunk,
                  "Score each window as serving prefills it, in chunks of N tokens (0: token by token, compression "
                  "acting from the first token); passkey prompts use N, else 512")
      ->check(CLI::Range(0, 1 << 24));
  sub->add_option("--score-from", f->score_from,
                  "Score only positions >= N of each window (top-1, KL, perplexity and the reads)")
      ->check(CLI::Range(0, 1 << 24));
  sub->add_flag("--json", f->json, "Print JSON");
  out.push_back({sub, [f] { return run_eval(*f); }});
}

}  // namespace slimkv
