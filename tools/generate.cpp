// `slimkv generate`: prompt in, prompt + continuation out on stdout (nothing else); stats on stderr with --verbose.
#include <chrono>
#include <cstdio>

#include "runner/generator.h"
#include "tokenizer/stream_decoder.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct GenerateFlags {
  ModelFlags model;
  std::string prompt;
  int32_t n = 64;
  float temp = 0.0f, top_p = 1.0f;
  int32_t top_k = 0;
  uint64_t seed = 0;
  bool verbose = false;
};

int run_generate(const GenerateFlags& f) {
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  auto model = load_model_from_flags(f.model);
  double load_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  ThreadPool pool(resolve_threads(f.model.threads));
  std::vector<int32_t> prompt = model->tokenizer->encode(f.prompt, true);
  if (prompt.empty()) prompt.push_back(model->tokenizer->bos_id());
  SLIMKV_CHECK(static_cast<int64_t>(prompt.size()) < model->config.max_seq_len,
               "the prompt has {} tokens but the model's context is {} tokens", prompt.size(),
               model->config.max_seq_len);
  GenerateOptions opts;
  opts.max_new_tokens = f.n;
  opts.sampling = {f.temp, f.top_p, f.top_k, f.seed};
  opts.sampling.validate();

  StreamDecoder dec(*model->tokenizer);
  std::string text;
  for (int32_t id : prompt) {
    if (id != model->tokenizer->bos_id()) text += dec.push(id);
  }
  std::fputs(text.c_str(), stdout);
  auto st = generate(*model, &pool, prompt, opts, [&](int32_t id) {
    std::string piece = dec.push(id);
    std::fputs(piece.c_str(), stdout);
    std::fflush(stdout);
    return true;
  });
  std::fputs(dec.flush().c_str(), stdout);
  std::fputs("\n", stdout);
  if (f.verbose) {
    std::fprintf(stderr, "model: %s\n", model->config.summary().c_str());
    std::fprintf(stderr, "load: %.1f ms, threads %d, isa %s\n", load_ms, pool.num_threads(),
                 std::string(isa_name(active_isa())).c_str());
    std::fprintf(stderr, "prompt: %d tokens in %.2f ms (%.1f tokens/s)\n", st.num_prompt_tokens, st.prefill_ms,
                 st.num_prompt_tokens / (st.prefill_ms / 1000.0));
    if (st.num_generated_tokens > 1) {
      std::fprintf(stderr, "generation: %d tokens, %.1f tokens/s\n", st.num_generated_tokens,
                   (st.num_generated_tokens - 1) / (st.decode_ms / 1000.0));
    }
  }
  return 0;
}

}  // namespace

void add_generate_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<GenerateFlags>();
  auto* sub = app.add_subcommand("generate", "Generate text from a prompt");
  add_model_flags(sub, f->model);
  sub->add_option("-p,--prompt", f->prompt, "Prompt text (default: empty = start from BOS)");
  sub->add_option("-n,--n-predict", f->n, "Number of tokens to generate")->check(CLI::Range(0, 1 << 24));
  sub->add_option("--temp", f->temp, "Sampling temperature (0 = greedy)")->check(CLI::Range(0.0, 100.0));
  sub->add_option("--top-p", f->top_p, "Nucleus sampling mass")->check(CLI::Range(0.0, 1.0));
  sub->add_option("--top-k", f->top_k, "Top-k (0 = off)")->check(CLI::Range(0, 1 << 24));
  sub->add_option("--seed", f->seed, "RNG seed");
  sub->add_flag("--verbose", f->verbose, "Print load time and speed on stderr");
  out.push_back({sub, [f] { return run_generate(*f); }});
}

}  // namespace slimkv
