// `slimkv generate`: prompt in, prompt + continuation out on stdout (nothing else); stats on stderr with --verbose.
#include <chrono>
#include <map>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "engine/engine.h"
#include "runner/generator.h"
#include "tools/prompts_file.h"
#include "tools/step_follow.h"
#include "tokenizer/stream_decoder.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct GenerateFlags {
  ModelFlags model;
  EngineConfig engine;
  std::string prompts_file;
  std::string prompt;
  std::string prompt_ids;  // --prompt-ids 1,5,9: token ids instead of text
  bool print_ids = false;
  int32_t n = 64;
  float temp = 0.0f, top_p = 1.0f;
  int32_t top_k = 0;
  uint64_t seed = 0;
  bool verbose = false;
};

// --prompts-file: every prompt through the batching engine as one workload; one JSON line per prompt, in order.
int run_prompts_file(GenerateFlags f) {
  auto model = load_model_from_flags(f.model);
  silence_stdout_unless_output_rank(*model);
  auto prompts = read_prompts_file(f.prompts_file, f.n);
  f.engine.threads = resolve_threads(f.model.threads);
  Engine engine(*model, f.engine);
  if (follow_unless_leader(engine, *model)) return 0;  // tensor parallelism: rank 0 schedules
  std::vector<RequestId> ids(prompts.size(), -1);
  std::vector<std::string> errors(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    RequestParams p;
    p.max_tokens = prompts[i].max_tokens;
    p.eos_id = model->tokenizer->eos_id();
    p.sampling = {f.temp, f.top_p, f.top_k, f.seed + i};
    auto r = engine.add_request(model->tokenizer->encode(prompts[i].text, true), p);
    if (auto* id = std::get_if<RequestId>(&r)) ids[i] = *id;
    else errors[i] = std::get<std::string>(r);
  }
  while (engine.has_unfinished()) engine.step();
  finish_leading(engine, *model);
  std::map<RequestId, std::unique_ptr<Request>> done;
  for (auto& r : engine.take_finished()) done[r->id] = std::move(r);
  for (size_t i = 0; i < prompts.size(); ++i) {
    nlohmann::json j = {{"index", i}, {"prompt", prompts[i].text}};
    if (ids[i] < 0) {
      j["error"] = errors[i];
    } else {
      const Request& r = *done.at(ids[i]);
      std::vector<int32_t> out(r.tokens.begin() + r.num_prompt_tokens, r.tokens.end());
      std::string text;
      StreamDecoder dec(*model->tokenizer);
      for (int32_t k = 0; k < r.num_tokens(); ++k) {  // decode prompt + completion together: spacing is right
        const int32_t id = r.tokens[k];
        std::string piece = id == model->tokenizer->bos_id() ? "" : dec.push(id);
        if (k >= r.num_prompt_tokens) text += piece;
      }
      text += dec.flush();
      j["completion"] = text;
      j["completion_tokens"] = out;
      j["prompt_tokens"] = r.num_prompt_tokens;
      j["cached_tokens"] = std::max(0, r.num_cached_tokens);
      j["finish_reason"] = finish_reason_name(r.finish);
    }
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  return 0;
}

// Cache flags (compression, --kv-config, --mla-attention) act on the engine's paged cache, and
// --speculative-config on its steps: when any is given, a single prompt runs through the engine too (one request),
// so no flag is silently ignored.
bool wants_engine(const GenerateFlags& f) {
  const CompressionConfig& c = f.engine.compress;
  return c.changes_cache() || !f.engine.kv_config_file.empty() || f.engine.mla_attention != "auto" ||
         !f.engine.speculative_config.empty();
}

std::vector<int32_t> engine_generate(const Model& model, GenerateFlags f, std::vector<int32_t> prompt,
                                     bool stop_at_eos) {
  f.engine.threads = resolve_threads(f.model.threads);
  Engine engine(model, f.engine);
  if (follow_unless_leader(engine, model)) return {};  // tensor parallelism: rank 0 schedules
  RequestParams p;
  p.max_tokens = f.n;
  p.eos_id = stop_at_eos ? model.tokenizer->eos_id() : -1;
  p.sampling = {f.temp, f.top_p, f.top_k, f.seed};
  p.sampling.validate();
  const int32_t n_prompt = static_cast<int32_t>(prompt.size());
  auto r = engine.add_request(std::move(prompt), p);
  if (auto* e = std::get_if<std::string>(&r)) fail("{}", *e);
  while (engine.has_unfinished()) engine.step();
  finish_leading(engine, model);
  if (f.verbose && !f.engine.speculative_config.empty()) {
    const Metrics& m = engine.metrics();
    std::fprintf(stderr, "speculative: %lld verify chunks, %lld draft tokens, %lld accepted, %lld decode steps\n",
                 static_cast<long long>(m.spec_drafts), static_cast<long long>(m.spec_draft_tokens),
                 static_cast<long long>(m.spec_accepted_tokens), static_cast<long long>(m.decode_steps));
  }
  auto done = engine.take_finished();
  SLIMKV_CHECK(done.size() == 1, "engine finished {} requests, expected 1", done.size());
  return {done[0]->tokens.begin() + n_prompt, done[0]->tokens.end()};
}

// --prompt-ids: ids in, ids out as one JSON array (no text, no stop at EOS: what engines are compared on).
int run_generate_ids(const GenerateFlags& f) {
  auto model = load_model_from_flags(f.model);
  silence_stdout_unless_output_rank(*model);
  ThreadPool pool(resolve_threads(f.model.threads));
  const std::vector<int32_t> prompt = parse_token_ids(f.prompt_ids, model->config.vocab_size, "--prompt-ids");
  SLIMKV_CHECK(static_cast<int64_t>(prompt.size()) < model->config.max_seq_len,
               "the prompt has {} tokens but the model's context is {} tokens", prompt.size(),
               model->config.max_seq_len);
  GenerateOptions opts;
  opts.max_new_tokens = f.n;
  opts.stop_at_eos = false;
  opts.sampling = {f.temp, f.top_p, f.top_k, f.seed};
  opts.sampling.validate();
  std::vector<int32_t> out;
  if (wants_engine(f)) {
    out = engine_generate(*model, f, prompt, false);
  } else {
    generate(*model, &pool, prompt, opts, [&](int32_t id) {
      out.push_back(id);
      return true;
    });
  }
  if (f.print_ids) {
    std::printf("%s\n", nlohmann::json(out).dump().c_str());
  } else {
    for (int32_t id : out) std::printf("%d\n", id);
  }
  return 0;
}

int run_generate(const GenerateFlags& f) {
  if (!f.prompts_file.empty() || wants_engine(f)) require_kv_budget(f.model.tensor_parallel_size, f.engine, "generate");
  if (!f.prompts_file.empty()) return run_prompts_file(f);
  if (!f.prompt_ids.empty()) return run_generate_ids(f);
  SLIMKV_CHECK(!f.print_ids, "--print-ids needs --prompt-ids");
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  auto model = load_model_from_flags(f.model);
  silence_stdout_unless_output_rank(*model);
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
  if (wants_engine(f)) {  // through the engine's (compressed) cache; printed when done
    for (int32_t id : engine_generate(*model, f, prompt, true)) std::fputs(dec.push(id).c_str(), stdout);
    std::fputs(dec.flush().c_str(), stdout);
    std::fputs("\n", stdout);
    return 0;
  }
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
  add_parallel_flags(sub, f->model);
  sub->add_option("-p,--prompt", f->prompt, "Prompt text (default: empty = start from BOS)");
  sub->add_option("--prompt-ids", f->prompt_ids,
                  "Prompt as token ids (1,5,9,...), evaluated as one batch; prints the generated ids (no stop at EOS)")
      ->excludes("--prompt");
  sub->add_flag("--print-ids", f->print_ids, "With --prompt-ids: print the generated ids as one JSON array");
  sub->add_option("-n,--n-predict", f->n, "Number of tokens to generate")->check(CLI::Range(0, 1 << 24));
  sub->add_option("--temp", f->temp, "Sampling temperature (0 = greedy)")->check(CLI::Range(0.0, 100.0));
  sub->add_option("--top-p", f->top_p, "Nucleus sampling mass")->check(CLI::Range(0.0, 1.0));
  sub->add_option("--top-k", f->top_k, "Top-k (0 = off)")->check(CLI::Range(0, 1 << 24));
  sub->add_option("--seed", f->seed, "RNG seed");
  sub->add_flag("--verbose", f->verbose, "Print load time and speed on stderr");
  sub->add_option("--prompts-file", f->prompts_file,
                  "Run every prompt of FILE (one per line, or JSONL with prompt/max_tokens) as one batched workload; "
                  "prints one JSON line per prompt, in input order");
  add_engine_flags(sub, f->engine);
  out.push_back({sub, [f] { return run_generate(*f); }});
}

}  // namespace slimkv
