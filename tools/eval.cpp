// `slimkv eval`: the full-cache baseline and each compression config on the same token windows, tokenizer and
// (greedy) sampling, compression applied while scoring (the cache is written compressed as the window advances,
// exactly as in decode). Reports KV bytes per token and vs f16, KL divergence and top-1 agreement against the
// baseline's next-token distributions, perplexity and its change, passkey accuracy, tokens/s.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "compress/compression_config.h"
#include "core/mapped_file.h"
#include "runner/generator.h"
#include "runner/sequence_forward.h"
#include "runner/teacher_forced.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct EvalFlags {
  ModelFlags model;
  std::string data, passkey;
  std::vector<std::string> configs;
  int32_t ctx = 0, max_tokens = 4096, max_passkey = 30;
  bool json = false;
};

struct Scores {  // one configuration's results
  std::string name;
  int64_t bytes_per_token = 0, f16_bytes_per_token = 0;
  std::vector<double> kl;  // per predicted position
  int64_t top1_same = 0, predictions = 0;
  double nll = 0;
  double seconds = 0;
  int32_t passkey_right = 0, passkey_total = 0;
};

// log-softmax of one row into out
void log_softmax(const float* row, int32_t n, std::vector<double>& out) {
  out.resize(n);
  double mx = row[0];
  for (int32_t i = 1; i < n; ++i) mx = std::max<double>(mx, row[i]);
  double sum = 0;
  for (int32_t i = 0; i < n; ++i) sum += std::exp(row[i] - mx);
  const double lse = mx + std::log(sum);
  for (int32_t i = 0; i < n; ++i) out[i] = row[i] - lse;
}

std::string first_digits(const std::string& s) {
  size_t a = s.find_first_of("0123456789");
  if (a == std::string::npos) return "";
  size_t b = s.find_first_not_of("0123456789", a);
  return s.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

int run_eval(const EvalFlags& f) {
  auto model = load_model_from_flags(f.model);
  const ModelConfig& c = model->config;
  const int32_t ctx = f.ctx > 0 ? std::min(f.ctx, c.max_seq_len) : c.max_seq_len;
  std::vector<int32_t> ids = model->tokenizer->encode(read_text_file(f.data), true);
  if (static_cast<int32_t>(ids.size()) > f.max_tokens) ids.resize(f.max_tokens);
  SLIMKV_CHECK(ids.size() >= 2, "{}: too little text", f.data);
  const auto windows = split_windows(ids, ctx, model->tokenizer->bos_id());  // as `perplexity`
  std::vector<std::pair<std::string, CompressionConfig>> configs;
  CompressionConfig base;
  base.enabled = false;
  configs.emplace_back("baseline (full f32 cache)", base);
  for (const auto& path : f.configs) configs.emplace_back(path, CompressionConfig::from_json_file(path));
  ThreadPool pool(resolve_threads(f.model.threads));
  const int32_t V = c.vocab_size;
  std::vector<std::vector<float>> base_logits(windows.size());  // [window][pos * V]
  std::vector<Scores> results;
  std::vector<double> lp_b, lp_c;
  for (size_t ci = 0; ci < configs.size(); ++ci) {
    const auto& [name, cc] = configs[ci];
    Scores sc;
    sc.name = name;
    KvLayout layout = cc.layout(c.num_layers, c.num_kv_heads, c.head_dim, 16);
    // Physical bytes per token of a full window: sparse retention keeps at most sinks + window tokens of it.
    const int64_t kept = cc.sparse()    ? std::min<int64_t>(ctx, cc.sink_tokens() + cc.window_tokens())
                         : cc.dynamic() ? std::min<int64_t>(ctx, cc.kv_sparse_topk + (cc.merge() ? 16 : 0))
                                        : ctx;
    sc.bytes_per_token = layout.bytes_per_token() * kept / ctx;
    sc.f16_bytes_per_token = 2LL * c.num_layers * c.kv_dim() * 2;
    if (!f.json) std::fprintf(stderr, "[%s]\n%s\n", name.c_str(), describe_plan(layout).c_str());
    std::vector<float> logits(static_cast<size_t>(ctx) * V);
    auto t0 = std::chrono::steady_clock::now();
    int64_t tokens = 0;
    for (size_t w = 0; w < windows.size(); ++w) {
      const auto& win = windows[w];
      // Token by token through the engine's KV path: compression and eviction act as the window advances.
      TeacherForcedRun run(*model, &pool, cc, ctx);
      for (size_t t = 0; t < win.size(); ++t) run.step(win[t], logits.data() + t * V);
      tokens += static_cast<int64_t>(win.size());
      if (ci == 0) base_logits[w].assign(logits.begin(), logits.begin() + win.size() * V);
      for (size_t t = 0; t + 1 < win.size(); ++t) {
        const float* rc = logits.data() + t * V;
        const float* rb = base_logits[w].data() + t * V;
        log_softmax(rc, V, lp_c);
        log_softmax(rb, V, lp_b);
        double kl = 0;
        for (int32_t i = 0; i < V; ++i) kl += std::exp(lp_b[i]) * (lp_b[i] - lp_c[i]);
        sc.kl.push_back(std::max(0.0, kl));
        sc.top1_same += (std::max_element(rc, rc + V) - rc) == (std::max_element(rb, rb + V) - rb);
        sc.nll -= lp_c[win[t + 1]];
        ++sc.predictions;
      }
    }
    sc.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sc.seconds = tokens / sc.seconds;  // tokens/s
    if (!f.passkey.empty()) {
      std::ifstream in(f.passkey);
      SLIMKV_CHECK(in.good(), "cannot open passkey file '{}'", f.passkey);
      std::string line;
      while (std::getline(in, line) && sc.passkey_total < f.max_passkey) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_object() || !j.contains("prompt") || !j.contains("answer")) continue;
        auto prompt = model->tokenizer->encode(j["prompt"].get<std::string>(), true);
        if (static_cast<int32_t>(prompt.size()) + 8 > c.max_seq_len) continue;
        GenerateOptions o;
        o.max_new_tokens = 8;
        o.compression = cc;
        std::vector<int32_t> out;
        generate(*model, &pool, prompt, o, [&](int32_t id) { out.push_back(id); return true; });
        std::vector<int32_t> all = prompt;
        all.insert(all.end(), out.begin(), out.end());
        std::string text = model->tokenizer->decode(all).substr(model->tokenizer->decode(prompt).size());
        sc.passkey_right += first_digits(text) == j["answer"].get<std::string>();
        ++sc.passkey_total;
      }
    }
    results.push_back(std::move(sc));
  }
  const double base_ppl = std::exp(results[0].nll / results[0].predictions);
  nlohmann::json rows = nlohmann::json::array();
  if (!f.json) {
    std::printf("model %s, %zu windows of <= %d tokens (%lld predictions), greedy\n", model->path.c_str(),
                windows.size(), ctx, static_cast<long long>(results[0].predictions));
    std::printf("| config | KV bytes/token | vs f16 | mean KL | p99 KL | top-1 agree | ppl | ppl change | passkey | tokens/s |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  }
  for (auto& r : results) {
    std::vector<double> kl = r.kl;
    std::sort(kl.begin(), kl.end());
    double mean_kl = 0;
    for (double x : kl) mean_kl += x;
    mean_kl /= std::max<size_t>(1, kl.size());
    const double p99 = kl.empty() ? 0 : kl[std::min(kl.size() - 1, static_cast<size_t>(0.99 * kl.size()))];
    const double ppl = std::exp(r.nll / r.predictions);
    const double top1 = static_cast<double>(r.top1_same) / r.predictions;
    const double ratio = static_cast<double>(r.bytes_per_token) / r.f16_bytes_per_token;
    std::string pk = r.passkey_total ? fmt::format("{}/{}", r.passkey_right, r.passkey_total) : "-";
    rows.push_back({{"config", r.name}, {"kv_bytes_per_token", r.bytes_per_token}, {"ratio_vs_f16", ratio},
                    {"mean_kl", mean_kl}, {"p99_kl", p99}, {"top1_agreement", top1}, {"perplexity", ppl},
                    {"ppl_change", ppl / base_ppl - 1}, {"passkey_right", r.passkey_right},
                    {"passkey_total", r.passkey_total}, {"tokens_per_s", r.seconds}});
    if (!f.json) {
      std::printf("| %s | %lld | %.1f%% | %.5f | %.4f | %.2f%% | %.4f | %+.2f%% | %s | %.0f |\n", r.name.c_str(),
                  static_cast<long long>(r.bytes_per_token), 100 * ratio, mean_kl, p99, 100 * top1, ppl,
                  100 * (ppl / base_ppl - 1), pk.c_str(), r.seconds);
    }
  }
  if (f.json) std::printf("%s\n", rows.dump().c_str());
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
  sub->add_option("--max-passkey", f->max_passkey, "Passkey prompts to run per config")->check(CLI::Range(0, 100000));
  sub->add_option("--ctx", f->ctx, "Window length (default: the model's context)")->check(CLI::Range(0, 1 << 24));
  sub->add_option("--max-tokens", f->max_tokens, "Tokens of the text to score")->check(CLI::Range(2, 1 << 30));
  sub->add_flag("--json", f->json, "Print JSON");
  out.push_back({sub, [f] { return run_eval(*f); }});
}

}  // namespace slimkv
