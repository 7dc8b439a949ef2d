// `slimkv perplexity`: teacher-forced mean NLL per token over a text file (BOS first, then the file's tokens).
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "runner/sequence_forward.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct PerplexityFlags {
  ModelFlags model;
  std::string file;
  int32_t ctx = 0;          // window length in tokens (default: model context)
  int32_t max_tokens = 0;   // 0 = whole file
  bool json = false;
};

int run_perplexity(const PerplexityFlags& f) {
  auto model = load_model_from_flags(f.model);
  const ModelConfig& c = model->config;
  std::string text = read_text_file(f.file);
  std::vector<int32_t> ids = model->tokenizer->encode(text, true);
  if (f.max_tokens > 0 && static_cast<int32_t>(ids.size()) > f.max_tokens) ids.resize(f.max_tokens);
  SLIMKV_CHECK(ids.size() >= 2, "{}: too little text to score", f.file);
  int32_t ctx = f.ctx > 0 ? std::min(f.ctx, c.max_seq_len) : c.max_seq_len;
  SLIMKV_CHECK(ctx >= 2, "--ctx must be at least 2");
  ThreadPool pool(resolve_threads(f.model.threads));
  SequenceForward fwd(*model, &pool, ctx);
  std::vector<float> logits(static_cast<size_t>(ctx) * c.vocab_size);
  double nll = 0;
  int64_t count = 0;
  // Non-overlapping windows over the tokens after BOS; each window is BOS + up to ctx-1 tokens, and every
  // token of the window is predicted from what precedes it (the definition kjv-1k's README uses).
  for (const auto& window : split_windows(ids, ctx, model->tokenizer->bos_id())) {
    fwd.forward(window, 0, true, logits.data());
    for (size_t t = 0; t + 1 < window.size(); ++t) {
      const float* row = logits.data() + t * c.vocab_size;
      float mx = row[0];
      for (int32_t i = 1; i < c.vocab_size; ++i) mx = std::max(mx, row[i]);
      double sum = 0;
      for (int32_t i = 0; i < c.vocab_size; ++i) sum += std::exp(static_cast<double>(row[i] - mx));
      nll += (std::log(sum) + mx) - row[window[t + 1]];
      ++count;
    }
  }
  double mean = nll / static_cast<double>(count);
  if (f.json) {
    nlohmann::json j = {{"file", f.file}, {"tokens", ids.size()}, {"predictions", count}, {"ctx", ctx},
                        {"mean_nll", mean}, {"perplexity", std::exp(mean)}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("tokens: %zu, predictions: %lld, ctx: %d\nmean NLL: %.4f nats/token\nperplexity: %.4f\n", ids.size(),
                static_cast<long long>(count), ctx, mean, std::exp(mean));
  }
  return 0;
}

}  // namespace

void add_perplexity_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<PerplexityFlags>();
  auto* sub = app.add_subcommand("perplexity", "Teacher-forced perplexity of a text file");
  add_model_flags(sub, f->model);
  sub->add_option("-f,--file", f->file, "Text file")->required();
  sub->add_option("--ctx", f->ctx, "Window length in tokens (default: model context)")->check(CLI::Range(0, 1 << 24));
  sub->add_option("--max-tokens", f->max_tokens, "Score at most N tokens, BOS included")->check(CLI::Range(0, 1 << 30));
  sub->add_flag("--json", f->json, "Print one JSON object");
  out.push_back({sub, [f] { return run_perplexity(*f); }});
}

}  // namespace slimkv
