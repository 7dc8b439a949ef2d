// `slimkv profile`: runs a batched workload through the engine with per-kernel-family timers (core/profiler.h) and
// prints where the time goes, separately for prefill and decode steps; warns when the sparse-index work (importance
// scoring + top-K selection + eviction/merge) exceeds 20% of decode time (seed 5.3), with the seed's remedies.
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>

#include "core/profiler.h"
#include "engine/engine.h"
#include "tools/commands.h"
#include "tools/common.h"
#include "tools/step_follow.h"

namespace slimkv {
namespace {

struct ProfileFlags {
  ModelFlags model;
  EngineConfig engine;
  int32_t num_prompts = 8, input_len = 256, output_len = 128;
  uint64_t seed = 0;
  double warn_share = 0.20;
  bool json = false;
};

nlohmann::json phase_json(const ProfileTimes& t) {
  nlohmann::json j = {{"total_s", t.total_s}, {"steps", t.steps}, {"tokens", t.tokens}};
  double known = 0;
  for (int k = 0; k < static_cast<int>(ProfKind::Other); ++k) known += t.seconds[k];
  for (int k = 0; k < static_cast<int>(ProfKind::kCount); ++k) {
    const double s = k == static_cast<int>(ProfKind::Other) ? t.seconds[k] + std::max(0.0, t.total_s - known) : t.seconds[k];
    j["kinds"][prof_kind_name(static_cast<ProfKind>(k))] = {{"seconds", s}, {"share", t.total_s > 0 ? s / t.total_s : 0}};
  }
  // post-hoc retention's scoring and selection, or DeepSeek-V4's lightning indexer (its native top-k)
  const double sparse = t.seconds[static_cast<int>(ProfKind::SparseScoring)] +
                        t.seconds[static_cast<int>(ProfKind::SparseSelection)] +
                        t.seconds[static_cast<int>(ProfKind::Indexer)];
  j["sparse_share"] = t.total_s > 0 ? sparse / t.total_s : 0;
  return j;
}

// Tensor parallelism: what the all-reduces moved against the Megatron formula (two per layer, dim floats per token).
nlohmann::json collectives_json(const Model& m, const ProfileTimes& prefill, const ProfileTimes& decode) {
  const CollectiveStats& s = m.collectives->stats();
  const int64_t tokens = prefill.tokens + decode.tokens;
  int64_t moe_layers = 0;
  for (const LayerConfig& l : m.config.layers) moe_layers += l.moe;
  const double per_token_layer = tokens > 0 ? static_cast<double>(s.all_reduce_bytes) / tokens / m.config.num_layers : 0;
  return {{"ranks", m.shard.ranks}, {"all_reduce_calls", s.all_reduce_calls}, {"all_reduce_bytes", s.all_reduce_bytes},
          {"all_reduce_ms", s.all_reduce_ms}, {"bytes_per_token_per_layer", per_token_layer},
          {"formula_bytes_per_token_per_layer", 2.0 * m.config.dim * sizeof(float)},
          {"all_gather_calls", s.all_gather_calls}, {"all_gather_bytes", s.all_gather_bytes},
          {"all_to_all_calls", s.all_to_all_calls}, {"all_to_all_bytes", s.all_to_all_bytes},
          {"all_to_all_ms", s.all_to_all_ms}, {"expert_parallel_size", m.shard.expert_groups},
          {"expert_combine", m.shard.expert_all_to_all ? "all-to-all" : "all-reduce"}, {"moe_layers", moe_layers},
          {"tokens", tokens}};
}

int run_profile(ProfileFlags f) {
  require_kv_budget(f.model.tensor_parallel_size, f.engine, "profile");
  auto model = load_model_from_flags(f.model);
  silence_stdout_unless_output_rank(*model);
  f.engine.threads = resolve_threads(f.model.threads);
  Engine engine(*model, f.engine);
  if (follow_unless_leader(engine, *model)) {  // tensor parallelism: rank 0 schedules; this rank runs its slices
    std::fprintf(stderr, "rank %d of %d: resident %.1f MiB (peak %.1f MiB)\n", model->shard.rank, model->shard.ranks,
                 proc_status_kb("VmRSS:") / 1024.0, proc_status_kb("VmHWM:") / 1024.0);
    return 0;
  }
  std::mt19937_64 rng(f.seed);
  std::uniform_int_distribution<int32_t> tok(3, model->config.vocab_size - 1);
  RequestParams p;
  p.max_tokens = f.output_len;
  p.ignore_eos = true;
  for (int32_t i = 0; i < f.num_prompts; ++i) {
    std::vector<int32_t> prompt = {model->tokenizer->bos_id() >= 0 ? model->tokenizer->bos_id() : 1};
    for (int32_t t = 1; t < f.input_len; ++t) prompt.push_back(tok(rng));
    auto r = engine.add_request(prompt, p);
    SLIMKV_CHECK(std::holds_alternative<RequestId>(r), "profile: request refused: {}", std::get<std::string>(r));
  }
  Profiler prof;
  Profiler::install(&prof);
  while (engine.has_unfinished()) engine.step();
  Profiler::install(nullptr);
  finish_leading(engine, *model);
  nlohmann::json j = {{"model", model->path}, {"prefill", phase_json(prof.prefill())},
                      {"decode", phase_json(prof.decode())}};
  if (model->collectives) {
    j["collectives"] = collectives_json(*model, prof.prefill(), prof.decode());
    std::fprintf(stderr, "rank %d of %d: resident %.1f MiB (peak %.1f MiB)\n", model->shard.rank, model->shard.ranks,
                 proc_status_kb("VmRSS:") / 1024.0, proc_status_kb("VmHWM:") / 1024.0);
  }
  const double sparse = j["decode"]["sparse_share"].get<double>();
  if (f.json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s: %d prompts x %d tokens, %d generated each\n%s\n", model->path.c_str(), f.num_prompts, f.input_len,
                f.output_len, describe_plan(engine.kv_layout()).c_str());
    for (const char* phase : {"prefill", "decode"}) {
      const auto& ph = j[phase];
      std::printf("\n%s: %lld steps, %lld tokens, %.3f s\n", phase, ph["steps"].get<long long>(),
                  ph["tokens"].get<long long>(), ph["total_s"].get<double>());
      for (const auto& [name, v] : ph["kinds"].items()) {
        std::printf("  %-40s %9.4f s %6.1f%%\n", name.c_str(), v["seconds"].get<double>(), 100 * v["share"].get<double>());
      }
    }
    if (j.contains("collectives")) {
      const auto& c = j["collectives"];
      std::printf("\ncollectives (%d ranks): %lld all-reduces, %.1f MiB, %.1f ms on rank 0; %.0f bytes per token per "
                  "layer (Megatron's 2 x dim x 4 = %.0f); %lld logits all-gathers (vocabulary-parallel head), %.1f "
                  "MiB received\n", c["ranks"].get<int>(), c["all_reduce_calls"].get<long long>(),
                  c["all_reduce_bytes"].get<double>() / (1 << 20), c["all_reduce_ms"].get<double>(),
                  c["bytes_per_token_per_layer"].get<double>(), c["formula_bytes_per_token_per_layer"].get<double>(),
                  c["all_gather_calls"].get<long long>(), c["all_gather_bytes"].get<double>() / (1 << 20));
      if (c["all_to_all_calls"].get<long long>() > 0) {
        std::printf("expert combine (all-to-all, %d expert groups): %lld exchanges, %.1f MiB sent, %.1f ms on rank 0 "
                    "(with the all-gather after each)\n", c["expert_parallel_size"].get<int>(),
                    c["all_to_all_calls"].get<long long>(), c["all_to_all_bytes"].get<double>() / (1 << 20),
                    c["all_to_all_ms"].get<double>());
      }
    }
    std::printf("\nsparse-index share of decode: %.1f%% (importance scoring + top-K selection + eviction/merge, "
                "DeepSeek-V4's lightning indexer, or select mode's row choice; the attention kernel's own importance "
                "accumulation is fused and counted under attention)\n", 100 * sparse);
    if (sparse > f.warn_share) {
      const bool select = engine.config().compress.select();
      std::printf("WARNING: above %.0f%%: the sparse index eats the gain (seed 5.3). %s\n", 100 * f.warn_share,
                  model->config.dsv4.enabled()
                      ? "The indexer scores every visible entry: a smaller model is indexer-bound; lower "
                        "--kv-sparse-topk has little effect on it"
                  : select ? "Select mode scores its whole index every step: a smaller --kv-select-rank or "
                             "--kv-select-dtype int4, or dense attention at this context length."
                           : "Raise --kv-sparse-topk (fewer evictions) or use --kv-sparse-mode static.");
    }
  }
  return 0;
}

}  // namespace

void add_profile_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<ProfileFlags>();
  auto* sub = app.add_subcommand("profile", "Where the time goes: per kernel family, prefill vs decode");
  add_model_flags(sub, f->model);
  add_parallel_flags(sub, f->model);
  add_engine_flags(sub, f->engine);
  sub->add_option("--num-prompts", f->num_prompts, "Concurrent requests")->check(CLI::Range(1, 65536));
  sub->add_option("--input-len", f->input_len, "Prompt tokens (random ids)")->check(CLI::Range(1, 1 << 24));
  sub->add_option("--output-len", f->output_len, "Generated tokens each")->check(CLI::Range(1, 1 << 24));
  sub->add_option("--seed", f->seed, "Prompt seed");
  sub->add_option("--warn-share", f->warn_share, "Warn above this sparse-index share of decode (0.20)");
  sub->add_flag("--json", f->json, "Print JSON");
  out.push_back({sub, [f] { return run_profile(*f); }});
}

}  // namespace slimkv
