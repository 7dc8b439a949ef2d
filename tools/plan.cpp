// `slimkv plan`: the KV memory planner — per-layer KV bytes per token, KV cache, weights, activations and total,
// before and after compression, what fits in --memory, the seed's scenario table, and an SVG chart.
#include <cctype>
#include <cstdio>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "model/blocks/compressed_attention.h"
#include "model/kv_streams.h"
#include "model/kv_projection.h"
#include "ops/memory_plan.h"
#include "ops/native_kv_plan.h"
#include "ops/parallel_plan.h"
#include "ops/svg_chart.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct PlanFlags {
  ModelFlags model;
  EngineConfig engine;  // only the compression flags are used
  ModelShape shape;
  double params = 0;    // --params: a count (7e9 works)
  PlanInput in;
  bool scenarios = false, json = false;
  std::string svg, preset;
  std::vector<int32_t> tensor_parallel{1}, expert_parallel{1};  // per-rank rows for every T x E given
};

std::string gb(int64_t bytes) {  // GB, or MB / kB for small models
  const double b = static_cast<double>(bytes);
  if (b >= 1e9 || b == 0) return fmt::format("{:.2f} GB", b / 1e9);
  return b >= 1e6 ? fmt::format("{:.2f} MB", b / 1e6) : fmt::format("{:.1f} kB", b / 1e3);
}
std::string gib(int64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / 1073741824.0); }

nlohmann::json breakdown_json(const MemoryBreakdown& b) {
  return {{"kv_bytes_per_token", b.kv_bytes_per_token}, {"kv_bytes_per_token_layer", b.kv_bytes_per_token_layer},
          {"kv_tokens_per_seq", b.kv_tokens_per_seq}, {"kv_tokens_per_layer", b.kv_tokens_per_layer},
          {"kv_bytes_per_seq", b.kv_bytes_per_seq}, {"kv_bytes", b.kv_bytes}, {"weights_bytes", b.weights_bytes},
          {"activation_bytes", b.activation_bytes}, {"total_bytes", b.total_bytes}, {"kv_share", b.kv_share()}};
}

void print_plan(const PlanInput& in, const PlanResult& r) {
  const ModelShape& s = in.shape;
  std::printf("model: %lld layers, %lld heads (%lld KV heads), head dim %lld, hidden %lld, vocab %lld, %.3g params (%s)\n",
              (long long)s.num_layers, (long long)s.num_heads, (long long)s.num_kv_heads, (long long)s.head_dim,
              (long long)s.hidden_dim, (long long)s.vocab_size,
              static_cast<double>(s.num_params ? s.num_params : s.estimated_params()), s.weights_dtype.c_str());
  std::printf("context %lld tokens x batch %lld, baseline KV dtype %s\n", (long long)in.context_tokens,
              (long long)in.batch, in.baseline_kv_dtype.c_str());
  int64_t windowed = 0, window = 0;
  for (const KvLayerSpec& l : s.kv_layers) {
    windowed += l.window_tokens > 0;
    window = std::max<int64_t>(window, l.window_tokens);
  }
  if (windowed > 0) {
    std::printf("KV layers: %lld full attention, %lld sliding-window (%lld tokens: each holds only its window)\n",
                (long long)(s.num_layers - windowed), (long long)windowed, (long long)window);
  }
  if (s.mla()) {
    const int64_t db = kv_dtype_bytes_x2(in.baseline_kv_dtype == "bf16" ? "f16" : in.baseline_kv_dtype) / 2;
    const int64_t mla = r.before.kv_bytes_per_token_layer[0], mha = s.mha_equivalent_bytes_per_token_layer(db);
    std::printf("MLA: %lld bytes per token per layer (latent %lld + rope key %lld values x %lld bytes) = %lld bytes "
                "per token for %lld layers; the same model's MHA cache (%lld heads x (%lld + %lld)) would hold %lld "
                "bytes per token per layer: %.1fx more\n",
                (long long)mla, (long long)s.kv_layers[0].head_dim_v,
                (long long)(s.kv_layers[0].head_dim_k - s.kv_layers[0].head_dim_v), (long long)db,
                (long long)r.before.kv_bytes_per_token, (long long)s.num_layers, (long long)s.num_heads,
                (long long)s.mla_qk_head_dim, (long long)s.mla_v_head_dim, (long long)mha,
                static_cast<double>(mha) / static_cast<double>(mla));
  }
  std::printf("KV bytes per sequence: %s before", gb(r.before.kv_bytes_per_seq).c_str());
  if (r.compressed) std::printf(", %s after", gb(r.after.kv_bytes_per_seq).c_str());
  std::printf(" (%lld bytes before)\n\n", (long long)r.before.kv_bytes_per_seq);
  std::printf("KV bytes per token per layer: %lld (baseline)", (long long)r.before.kv_bytes_per_token_layer[0]);
  if (r.compressed) {
    std::printf(" -> compressed:");
    for (size_t l = 0; l < r.after.kv_bytes_per_token_layer.size() && l < 16; ++l) {
      std::printf(" %lld", (long long)r.after.kv_bytes_per_token_layer[l]);
    }
    if (r.after.kv_bytes_per_token_layer.size() > 16) std::printf(" ...");
  }
  std::printf("\n\n%-28s %16s", "", "before");
  if (r.compressed) std::printf(" %16s", "after");
  std::printf("\n");
  auto row = [&](const char* name, int64_t a, int64_t b) {
    std::printf("%-28s %16s", name, gb(a).c_str());
    if (r.compressed) std::printf(" %16s", gb(b).c_str());
    std::printf("\n");
  };
  std::printf("%-28s %16lld", "KV tokens per sequence", (long long)r.before.kv_tokens_per_seq);
  if (r.compressed) std::printf(" %16lld", (long long)r.after.kv_tokens_per_seq);
  std::printf("\n");
  row("KV cache", r.before.kv_bytes, r.after.kv_bytes);
  row("weights", r.before.weights_bytes, r.after.weights_bytes);
  row("activations + buffers", r.before.activation_bytes, r.after.activation_bytes);
  row("total", r.before.total_bytes, r.after.total_bytes);
  std::printf("%-28s %15.1f%%", "KV share of total", 100 * r.before.kv_share());
  if (r.compressed) std::printf(" %15.1f%%", 100 * r.after.kv_share());
  std::printf("\n");
  if (r.compressed) {
    std::printf("\nKV cache: %.2fx smaller; overall memory: -%.1f%%\n",
                static_cast<double>(r.before.kv_bytes) / static_cast<double>(r.after.kv_bytes),
                100 * r.overall_reduction);
  }
  std::printf("(%s)\n", r.activation_assumption.c_str());
  if (s.mla()) {
    std::printf("seed's formula 2 x layers x heads x head_dim x ctx x batch x bytes: does not apply to MLA (one latent "
                "per token, not K and V per head; the MHA comparison above is the like-for-like one)\n");
  } else {
    std::printf("seed's formula 2 x layers x heads x head_dim x ctx x batch x bytes = %s (%s)",
                gb(r.seed_formula_bytes).c_str(), gib(r.seed_formula_bytes).c_str());
    if (s.num_kv_heads != s.num_heads) {
      std::printf(": it uses attention heads, so for this GQA model (%lld KV heads) it overstates the KV cache %lldx",
                  (long long)s.num_kv_heads, (long long)(s.num_heads / s.num_kv_heads));
    }
    std::printf("\n");
  }
  if (in.memory_gib > 0) {
    const std::string ctx_after = r.max_context_after == -2 ? std::string("no limit (retention caps the KV per sequence)")
                                                            : std::to_string(r.max_context_after);
    std::printf("\nwithin %.2f GiB: batch at %lld tokens: %lld before, %lld after; context at batch %lld: %lld before, %s after\n",
                in.memory_gib, (long long)in.context_tokens, (long long)r.max_batch_before, (long long)r.max_batch_after,
                (long long)in.batch, (long long)r.max_context_before, ctx_after.c_str());
  }
}

// --tensor-parallel-size T.. / --expert-parallel-size E..: weights and KV per rank and the collectives' bytes per
// token, one row per T x E (ops/parallel_plan.h).
void print_parallel(const ParallelShape& s, const PlanFlags& f) {
  if (f.tensor_parallel == std::vector<int32_t>{1} && f.expert_parallel == std::vector<int32_t>{1}) return;
  nlohmann::json rows = nlohmann::json::array();
  if (!f.json) {
    std::printf("\nper rank, %s, context %lld x batch %lld (T ranks; routed experts in E groups of T / E ranks, "
                "column-split inside a group; the rest over T):\n", s.name.c_str(), (long long)f.in.context_tokens,
                (long long)f.in.batch);
    std::printf("%4s %4s %14s %14s %20s %20s %12s %22s\n", "T", "E", "weights/rank", "KV/rank", "all-reduce B/token",
                "(ring, on the wire)", "expert reach", "all-to-all combine B/token");
  }
  for (int32_t tp : f.tensor_parallel) {
    for (int32_t ep : f.expert_parallel) {
      if (tp % ep != 0) continue;  // E divides T
      const ParallelPlanRow r = plan_parallel(s, tp, ep, f.in.context_tokens, f.in.batch);
      rows.push_back({{"tensor_parallel", tp}, {"expert_parallel", ep}, {"weights_bytes_per_rank", r.weights_bytes_per_rank},
                      {"kv_bytes_per_rank", r.kv_bytes_per_rank}, {"all_reduce_bytes_per_token", r.all_reduce_bytes_per_token},
                      {"all_reduce_wire_bytes_per_token", r.all_reduce_wire_bytes_per_token},
                      {"expert_reach", r.expert_reach},
                      {"all_to_all_wire_bytes_per_token", r.all_to_all_wire_bytes_per_token}});
      if (!f.json) {
        std::printf("%4d %4d %14s %14s %20lld %20lld %12.3f %22lld\n", tp, ep, gib(r.weights_bytes_per_rank).c_str(),
                    gib(r.kv_bytes_per_rank).c_str(), (long long)r.all_reduce_bytes_per_token,
                    (long long)r.all_reduce_wire_bytes_per_token, r.expert_reach,
                    (long long)r.all_to_all_wire_bytes_per_token);
      }
    }
  }
  if (f.json) std::printf("%s\n", nlohmann::json{{"parallel", s.name}, {"rows", rows}}.dump(2).c_str());
}

// A loaded model's KV per token: per-head layers' (split over T) and shared latents' / compressed streams' (whole).
ParallelShape parallel_shape_for(const Model& m, const CompressionConfig& cc) {
  const KvLayout layout = model_kv_layout(m, 8, cc);
  int64_t split = 0, replicated = 0;
  for (int32_t l = 0; l < m.config.num_layers && l < static_cast<int32_t>(layout.layers.size()); ++l) {
    const LayerConfig& lc = m.config.layers[l];
    if (lc.delta_net) continue;  // a recurrent state: per sequence, not per token
    (lc.mla || lc.compress_ratio > 0 || m.config.dsv4.enabled() ? replicated : split) += layout.layers[l].bytes_per_token();
  }
  return parallel_shape_of_model(m, split, replicated);
}

// Natively compressed caches (DeepSeek-V4, V3.2) per layer kind, and V4-Flash against V3.2 and a dense GQA-8 model.
int run_native_plan(const PlanFlags& f, const NativeKvShape& s) {
  const int64_t ctx = f.in.context_tokens;
  SLIMKV_CHECK(ctx >= 1 && ctx <= (int64_t{1} << 40), "--ctx must be in 1..2^40 (got {})", ctx);
  nlohmann::json j = {{"preset", s.name}, {"source", s.source}, {"context_tokens", ctx}, {"batch", f.in.batch}};
  if (!f.json) {
    std::printf("%s KV cache at %lld tokens (%s)\n", s.name.c_str(), (long long)ctx, s.source.c_str());
    std::printf("%-30s %6s %12s %10s %-42s %14s\n", "layer kind", "layers", "tokens/rec", "bytes/rec", "storage",
                "bytes (1 seq)");
  }
  for (const NativeKvKind& k : s.kinds) {
    const std::string per = k.per_sequence ? "per seq" : k.window_tokens > 0 ? fmt::format("1 (<= {})", k.window_tokens)
                                                                              : std::to_string(k.tokens_per_record);
    j["kinds"].push_back({{"name", k.name}, {"layers", k.layers}, {"tokens_per_record", k.tokens_per_record},
                          {"window_tokens", k.window_tokens}, {"record_bytes", k.record_bytes},
                          {"storage", k.storage}, {"per_sequence", k.per_sequence}, {"bytes", k.bytes(ctx)}});
    if (!f.json) {
      std::printf("%-30s %6lld %12s %10lld %-42s %14s\n", k.name.c_str(), (long long)k.layers, per.c_str(),
                  (long long)k.record_bytes, k.storage.c_str(), gib(k.bytes(ctx)).c_str());
    }
  }
  const int64_t total = s.context_bytes(ctx) * f.in.batch, state = (s.bytes(ctx) - s.context_bytes(ctx)) * f.in.batch;
  j["context_bytes"] = total;
  j["state_bytes"] = state;
  if (!f.json) {
    std::printf("total x batch %lld: %s (%.1f bytes/token)%s\n", (long long)f.in.batch, gib(total).c_str(),
                static_cast<double>(s.context_bytes(ctx)) / static_cast<double>(ctx),
                state ? fmt::format(" + compressor state {}", gib(state)).c_str() : "");
  }
  if (s.name.rfind("deepseek-v4-", 0) == 0) {  // V4-Flash / V4-Pro against V3.2 and a GQA-8 model of their depth
    const std::string model = s.name == "deepseek-v4-pro" ? "V4-Pro" : "V4-Flash";
    for (const std::string& other : {std::string("deepseek-v3.2"), fmt::format("gqa8-{}l-bf16", s.num_layers)}) {
      const NativeKvShape o = native_kv_preset(other);
      const double ratio = static_cast<double>(s.context_bytes(ctx)) / static_cast<double>(o.context_bytes(ctx));
      j["vs"][other] = {{"bytes", o.context_bytes(ctx) * f.in.batch}, {"ratio", ratio}};
      if (!f.json) {
        std::printf("vs %s (%s): %s -> %s needs %.1f%% of it\n", other.c_str(), o.source.c_str(),
                    gib(o.context_bytes(ctx) * f.in.batch).c_str(), model.c_str(), 100 * ratio);
      }
    }
  }
  if (f.json) std::printf("%s\n", j.dump(2).c_str());
  if (is_parallel_preset(s.name)) {  // every rank holds the one shared KV stream whole
    ParallelShape p = parallel_shape_preset(s.name);
    p.kv_replicated_bytes_per_token = s.context_bytes(ctx) / ctx;
    print_parallel(p, f);
  } else if (f.tensor_parallel != std::vector<int32_t>{1} || f.expert_parallel != std::vector<int32_t>{1}) {
    SLIMKV_CHECK(s.source.find("model file") != std::string::npos,
                 "plan: no weight shape for --preset {} (per-rank rows: -m MODEL or --preset deepseek-v4-flash)", s.name);
  }
  return 0;
}

// A loaded DeepSeek-V4 model's streams as slimkv stores them (the cache dtype flags apply).
NativeKvShape native_kv_of_model(const Model& m, const CompressionConfig& cc) {
  const ModelConfig& c = m.config;
  const KvLayout layout = model_kv_layout(m, 8, cc);
  NativeKvShape s;
  s.name = m.path;
  s.source = "the model file, slimkv's storage";
  s.num_layers = c.num_layers;
  auto add = [&](const std::string& name, int32_t stream, int64_t per, int64_t window, bool state) {
    if (stream < 0) return;
    const KvLayerGeometry& g = layout.layers[stream];
    const std::string storage = fmt::format("{} x {}", kv_dtype_name(g.dtype), g.k_dim);
    for (NativeKvKind& k : s.kinds) {
      if (k.name == name && k.record_bytes == g.bytes_per_token() * (state ? window : 1)) {
        ++k.layers;
        return;
      }
    }
    s.kinds.push_back({name, 1, per, window, g.bytes_per_token(), storage, state});
    if (state) s.kinds.back().record_bytes *= window;
  };
  for (int32_t l = 0; l < c.num_layers; ++l) {
    const CompressedLayerStreams k = compressed_stream_indices(c, l);
    const int32_t r = c.layers[l].compress_ratio;
    add("sliding window (raw tokens)", k.raw, 1, c.layers[l].sliding_window, false);
    add(fmt::format("{} entries (1:{})", r == 4 ? "CSA" : "HCA", r), k.comp, r, 0, false);
    add("CSA indexer keys (1:4)", k.idx, 4, 0, false);
    add(fmt::format("{} compressor state", r == 4 ? "CSA" : "HCA"), k.comp_state, 1, (r == 4 ? 2 : 1) * r, true);
    add("CSA indexer compressor state", k.idx_state, 1, 2 * r, true);
  }
  return s;
}

int run_plan(PlanFlags f) {
  if (is_native_kv_preset(f.preset)) return run_native_plan(f, native_kv_preset(f.preset));
  if (f.preset.empty() && f.shape.num_layers == 0) {
    auto model = load_model_from_flags(f.model);
    if (model->config.dsv4.enabled()) {
      const int rc = run_native_plan(f, native_kv_of_model(*model, f.engine.compress));
      print_parallel(parallel_shape_for(*model, f.engine.compress), f);
      return rc;
    }
  }
  PlanInput in = f.in;
  std::optional<ParallelShape> parallel;  // a loaded model's, for --tensor-parallel-size / --expert-parallel-size
  in.compress = f.engine.compress;
  if (!f.engine.kv_config_file.empty()) in.compress = CompressionConfig::from_json_file(f.engine.kv_config_file);
  if (!f.preset.empty()) {
    in.shape = preset_shape(f.preset);
    if (f.shape.weights_dtype != "f16") in.shape.weights_dtype = f.shape.weights_dtype;
    if (f.params > 0) in.shape.num_params = static_cast<int64_t>(f.params);
  } else if (f.shape.num_layers > 0) {  // explicit hyper-parameters
    SLIMKV_CHECK(in.compress.kv_sparse_schedule != KvSparseSchedule::Auto || !in.compress.kv_sparse_layer_topk.empty(),
                 "plan: --kv-sparse-schedule auto needs -m MODEL (its calibration file decides the per-layer budgets; "
                 "the total equals uniform's)");
    in.shape = f.shape;
    if (in.shape.num_kv_heads == 0) in.shape.num_kv_heads = in.shape.num_heads;
    in.shape.num_params = static_cast<int64_t>(f.params);
  } else {
    auto model = load_model_from_flags(f.model);
    const ModelConfig& c = model->config;
    in.shape = {c.num_layers, c.num_heads, c.num_kv_heads, c.head_dim, c.dim, c.hidden_dim, c.vocab_size, 0, "f16", {}};
    in.shape.kv_layers = kv_layer_specs(c);  // per-layer heads, head sizes and sliding windows
    if (c.mla.enabled()) {
      in.shape.mla_qk_head_dim = c.mla.q_head_dim();
      in.shape.mla_v_head_dim = c.mla.v_head_dim;
    }
    in.compress = resolve_sparse_schedule(in.compress, *model, 8);
    std::string wd(dtype_name(model->layers[0].wq.dtype));
    for (auto& ch : wd) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    in.shape.weights_dtype = f.shape.weights_dtype != "f16" ? f.shape.weights_dtype : wd;
    in.shape.num_params = static_cast<int64_t>(f.params);
    parallel = parallel_shape_for(*model, in.compress);
  }
  std::vector<std::pair<std::string, PlanInput>> runs;
  if (f.scenarios) {
    for (const auto& sc : seed_scenarios()) {
      PlanInput p = in;
      p.context_tokens = sc.context_tokens;
      p.batch = sc.batch;
      runs.push_back({sc.name, p});
    }
  } else {
    runs.push_back({"", in});
  }
  nlohmann::json out = nlohmann::json::array();
  std::vector<BarGroup> bars;
  if (f.scenarios && !f.json) {
    std::printf("%-44s %10s %10s %12s %12s %10s\n", "scenario", "KV before", "KV after", "total before", "total after",
                "overall");
  }
  for (const auto& [name, p] : runs) {
    PlanResult r = make_plan(p);
    if (!parallel) {  // a preset's or explicit shape: the approximation parallel_plan.h states
      parallel = parallel_shape_of_plan(p.shape, r.after.weights_bytes, r.after.kv_bytes_per_token);
      parallel->name = (f.preset.empty() ? std::string("the explicit shape") : f.preset) +
                       " (approximate: weights past attention and embeddings split over all T x E ranks)";
    }
    nlohmann::json j = {{"scenario", name}, {"context_tokens", p.context_tokens}, {"batch", p.batch},
                        {"before", breakdown_json(r.before)}, {"after", breakdown_json(r.after)},
                        {"compressed", r.compressed}, {"overall_reduction", r.overall_reduction},
                        {"seed_formula_bytes", r.seed_formula_bytes}, {"activation_assumption", r.activation_assumption}};
    if (p.memory_gib > 0) {
      j["max_batch"] = {{"before", r.max_batch_before}, {"after", r.max_batch_after}};
      j["max_context"] = {{"before", r.max_context_before}, {"after", r.max_context_after}};
    }
    out.push_back(j);
    const std::string label = fmt::format("{}K x {}", p.context_tokens / 1024, p.batch);
    auto gbv = [](int64_t b) { return static_cast<double>(b) / 1e9; };
    bars.push_back({label + " before", {gbv(r.before.weights_bytes), gbv(r.before.kv_bytes), gbv(r.before.activation_bytes)}});
    if (r.compressed) {
      bars.push_back({label + " after", {gbv(r.after.weights_bytes), gbv(r.after.kv_bytes), gbv(r.after.activation_bytes)}});
    }
    if (f.json) continue;
    if (f.scenarios) {
      std::printf("%-44s %9.1f%% %9.1f%% %12s %12s %9.1f%%\n", name.c_str(), 100 * r.before.kv_share(),
                  100 * r.after.kv_share(), gb(r.before.total_bytes).c_str(), gb(r.after.total_bytes).c_str(),
                  -100 * r.overall_reduction);
    } else {
      print_plan(p, r);
    }
  }
  if (f.json) std::printf("%s\n", out.dump(2).c_str());
  if (parallel) print_parallel(*parallel, f);
  if (!f.svg.empty()) {
    std::ofstream(f.svg) << svg_stacked_bars({"Memory before and after KV compression", "", "GB"},
                                             {"weights", "KV cache", "activations"}, bars);
    std::fprintf(stderr, "wrote %s\n", f.svg.c_str());
  }
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<PlanFlags>();
  CLI::App* sub = app.add_subcommand("plan", "KV memory planner: KV, weights, activations before/after compression");
  add_model_flags(sub, f->model);
  add_engine_flags(sub, f->engine);
  sub->add_option("--preset", f->preset, "A published config instead of -m: deepseek-v3 (and R1), kimi-k2, "
                                         "deepseek-v2-lite (weights bf16 unless --weights-dtype); natively compressed caches: "
                                         "deepseek-v4-flash, deepseek-v4-pro (each compared with deepseek-v3.2 and a GQA-8 "
                                         "model of its depth), deepseek-v3.2, gqa8-43l-bf16, gqa8-61l-bf16");
  sub->add_option("--layers", f->shape.num_layers, "Explicit shape: layers (instead of -m)");
  sub->add_option("--heads", f->shape.num_heads, "Attention heads");
  sub->add_option("--kv-heads", f->shape.num_kv_heads, "KV heads (default: --heads; fewer = GQA)");
  sub->add_option("--head-dim", f->shape.head_dim, "Head dimension");
  sub->add_option("--hidden", f->shape.hidden_dim, "Embedding width (default heads x head dim)");
  sub->add_option("--ffn", f->shape.ffn_dim, "MLP width (default 8/3 hidden)");
  sub->add_option("--vocab", f->shape.vocab_size, "Vocabulary size");
  sub->add_option("--params", f->params, "Parameter count, e.g. 70e9 (default: from the shape)");
  sub->add_option("--weights-dtype", f->shape.weights_dtype, "f32|f16|bf16|q8_0|q4_0 (default: the model's, else f16)");
  sub->add_option("--ctx", f->in.context_tokens, "Context length in tokens")->required();
  sub->add_option("--batch", f->in.batch, "Concurrent sequences (default 1)");
  sub->add_option("--baseline-kv-dtype", f->in.baseline_kv_dtype, "Uncompressed KV dtype: f16 (default) or f32");
  sub->add_option("--memory", f->in.memory_gib, "Memory available, GiB: report the largest batch and context that fit");
  sub->add_flag("--scenarios", f->scenarios, "The seed's scenario table: 4K x 8, 32K x 2, 128K x 1");
  sub->add_option("--svg", f->svg, "Write a stacked bar chart (weights / KV / activations) before and after");
  sub->add_flag("--json", f->json, "Machine-readable output");
  sub->add_option("--tensor-parallel-size", f->tensor_parallel, "Per-rank rows for these tensor-parallel sizes (e.g. 1 2 4 8)")
      ->check(CLI::Range(1, 64));
  sub->add_option("--expert-parallel-size", f->expert_parallel, "... and these expert-parallel sizes (expert groups; "
                  "rows where E divides T)")
      ->check(CLI::Range(1, 64));
  out.push_back({sub, [f] { return run_plan(*f); }});
}

}  // namespace slimkv
