// `slimkv bench offline --context-len L --batch B --output-len O [--config A.json ...]`: long-context decode, the
// baseline (an f16 cache; MLA: the f32 latent cache) and every config in the same run. Depth is reached by real
// prefill (default) or by `--fill synthetic` (caches filled with seeded N(0,1) K/V through each layout's encoder:
// decode at 32K in minutes on 2 cores; labelled in the output). Reports decode tokens/s (aggregate), ms per step,
// peak KV bytes, peak RSS, the ratios to the baseline and the sparse-index share of decode (profiler).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/profiler.h"
#include "engine/engine.h"
#include "model/synthetic_model.h"
#include "tools/bench_long.h"
#include "tools/common.h"

namespace slimkv {
namespace {

void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }  // VmHWM := VmRSS (Linux >= 4.0)

struct LongRow {
  std::string name;
  int64_t kv_bytes_per_token = 0, peak_kv_bytes = 0;
  int64_t end_kv_bytes_per_seq = 0;  // KV bytes each sequence holds at its last decode step (every group)
  int64_t end_record_bytes_per_seq = 0;  // ... counting only its groups' own records (the pool's block bytes cover
                                         // every storage tensor: with mixed record sizes, as DeepSeek-V4's streams
                                         // have, a block holds more bytes than its group uses)
  double decode_tps = 0, ms_per_step = 0, peak_rss_mib = 0, sparse_share = 0, fill_s = 0;
  nlohmann::json decode_shares;  // share of decode time per kernel family
};

// Tokens each sequence may generate: output_len + 1, and with real (chunked) prefill one more per step of the fill
// (sequences that have their prompt decode while the others still prefill; a step prefills at most its token budget
// less the decoding sequences).
int32_t decode_room_tokens(const LongContextFlags& f, int32_t max_num_batched_tokens) {
  const int64_t per_step = std::max(1, max_num_batched_tokens - f.batch);
  const int64_t fill_steps =
      f.fill == "real" ? static_cast<int64_t>(f.batch) * f.context_len / per_step + f.batch + 1 : 0;
  return static_cast<int32_t>(std::min<int64_t>(f.output_len + 1 + fill_steps, 1 << 24));
}

LongRow run_one(const Model& model, EngineConfig cfg, const std::string& name, const LongContextFlags& f) {
  cfg.cache.enable_prefix_caching = false;  // synthetic rows are not the tokens' K/V; real prompts are all distinct
  cfg.sched.max_num_seqs = std::max(cfg.sched.max_num_seqs, f.batch);
  if (cfg.sched.max_model_len == 0) {
    cfg.sched.max_model_len = std::min(model.config.max_seq_len,
                                       f.context_len + decode_room_tokens(f, cfg.sched.max_num_batched_tokens));
  }
  reset_peak_rss();
  const int64_t rss0 = proc_status_kb("VmRSS:");
  Engine engine(model, cfg);
  LongRow row;
  row.name = name;
  row.kv_bytes_per_token = engine.kv_layout().bytes_per_token();
  std::mt19937_64 rng(f.seed);
  RequestParams p;
  // Real prefill is chunked: sequences that have their prompt decode while the others still prefill, so they get
  // room for every step of the fill (at most one prompt chunk a step) beside the measured ones; the measurement
  // starts when every sequence has its first token, runs output_len steps, then aborts what is left.
  p.max_tokens =
      std::min(decode_room_tokens(f, cfg.sched.max_num_batched_tokens), cfg.sched.max_model_len - f.context_len);
  p.ignore_eos = true;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<RequestId> ids;
  for (int32_t b = 0; b < f.batch; ++b) {
    std::vector<int32_t> prompt = {1};
    while (static_cast<int32_t>(prompt.size()) < f.context_len) {
      prompt.push_back(3 + static_cast<int32_t>(rng() % (model.config.vocab_size - 3)));
    }
    auto r = f.fill == "synthetic" ? engine.add_synthetic_prefilled_request(prompt, p, f.seed + b)
                                   : engine.add_request(prompt, p);
    SLIMKV_CHECK(std::holds_alternative<RequestId>(r), "{}: sequence {} refused: {}", name, b,
                 std::get<std::string>(r));
    ids.push_back(std::get<RequestId>(r));
  }
  // Until every sequence has its first token (prefill, or the last prompt token after a synthetic fill).
  std::set<RequestId> started;
  while (static_cast<int32_t>(started.size()) < f.batch) {
    SLIMKV_CHECK(engine.has_unfinished(), "{}: a sequence finished before every one had started", name);
    for (const StepEvent& e : engine.step()) {
      if (e.token >= 0) started.insert(e.id);
    }
  }
  row.fill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  row.peak_kv_bytes = engine.peak_kv_bytes();
  Profiler prof;
  Profiler::install(&prof);
  const auto t1 = std::chrono::steady_clock::now();
  int64_t steps = 0, tokens = 0;
  for (; steps < f.output_len && engine.has_unfinished(); ++steps) {
    if (engine.metrics().num_running == f.batch) {  // all still running: the blocks they hold now
      row.end_kv_bytes_per_seq = engine.kv_bytes_in_use() / f.batch;
      row.end_record_bytes_per_seq = engine.record_bytes_in_use() / f.batch;
    }
    for (const StepEvent& e : engine.step()) tokens += e.token >= 0;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  Profiler::install(nullptr);
  const ProfileTimes& d = prof.decode();
  row.sparse_share = d.total_s > 0 ? (d.seconds[static_cast<int>(ProfKind::SparseScoring)] +
                                      d.seconds[static_cast<int>(ProfKind::SparseSelection)] +
                                      d.seconds[static_cast<int>(ProfKind::Indexer)]) / d.total_s
                                   : 0;
  for (int k = 0; k < static_cast<int>(ProfKind::kCount); ++k) {
    row.decode_shares[prof_kind_name(static_cast<ProfKind>(k))] = d.total_s > 0 ? d.seconds[k] / d.total_s : 0;
  }
  row.decode_tps = static_cast<double>(tokens) / secs;
  row.ms_per_step = 1000 * secs / std::max<int64_t>(1, steps);
  row.peak_kv_bytes = std::max(row.peak_kv_bytes, engine.peak_kv_bytes());
  row.peak_rss_mib = static_cast<double>(proc_status_kb("VmHWM:") - rss0) / 1024.0;
  for (RequestId id : ids) engine.abort(id);
  engine.take_finished();
  return row;
}

}  // namespace

int run_long_context(const LongContextFlags& f, const ModelFlags& mf, EngineConfig base) {
  std::unique_ptr<Model> model;
  if (!f.synthetic.empty()) {
    model = make_synthetic_model(f.synthetic, parse_dtype(f.dtype), f.seed + 1);
    // Random weights have no trained context: stretch the shape's to the benchmark's (RoPE tables follow).
    model->config.max_seq_len = std::max(model->config.max_seq_len,
                                         f.context_len + decode_room_tokens(f, base.sched.max_num_batched_tokens) + 8);
  } else {
    model = load_model_from_flags(mf);
    const int32_t need = f.context_len + decode_room_tokens(f, base.sched.max_num_batched_tokens) + 8;
    if (need > model->config.max_seq_len) {  // as llama.cpp's -c beyond n_ctx_train: runs, with a warning
      std::fprintf(stderr, "warning: sequences run to %d tokens (context %d, then decode; with real prefill the first "
                           "to finish their prompt decode while the others prefill), beyond the model's trained %d: "
                           "speed and bytes only, its outputs are not meaningful there\n",
                   need - 8, f.context_len, model->config.max_seq_len);
      model->config.max_seq_len = need;
    }
  }
  SLIMKV_CHECK(f.fill == "real" || f.fill == "synthetic", "--fill {}: expected real or synthetic", f.fill);
  SLIMKV_CHECK(f.context_len >= 2 && f.batch >= 1 && f.output_len >= 1, "--context-len, --batch, --output-len");
  base.threads = resolve_threads(mf.threads);
  std::vector<std::pair<std::string, EngineConfig>> runs;
  EngineConfig off = base;
  off.compress = CompressionConfig{};
  off.compress.enabled = false;
  off.kv_config_file.clear();
  if (model->config.mla.enabled()) {  // absorbed and decompressed attention over the same latent cache
    off.mla_attention = "absorbed";
    runs.emplace_back("baseline (f32 latent cache), absorbed attention", off);
    EngineConfig dec = off;
    dec.mla_attention = "decompressed";
    runs.emplace_back("baseline (f32 latent cache), decompressed attention", dec);
    if (f.fill == "real") {  // the engine's default: per step, the cheaper path (prefill chunks vs decode)
      EngineConfig au = off;
      au.mla_attention = "auto";
      runs.emplace_back("baseline (f32 latent cache), auto attention", au);
    }
  } else {  // f16 is the baseline compression is compared with (as llama.cpp's and vLLM's default caches)
    EngineConfig f16 = base;
    f16.compress = CompressionConfig{};
    f16.compress.kv_cache_dtype = KvCacheDtype::F16;
    f16.kv_config_file.clear();
    runs.emplace_back("baseline (f16 cache)", f16);
  }
  for (const auto& path : f.configs) {
    EngineConfig c = base;
    c.kv_config_file = path;
    runs.emplace_back(path, c);
  }
  const std::string what = f.synthetic.empty() ? model->path : f.synthetic + " " + f.dtype + " (random weights: speed only)";
  if (model->config.mla.enabled()) {
    const MlaConfig& a = model->config.mla;
    const int64_t latent = a.kv_lora_rank + a.rope_dim, mha = static_cast<int64_t>(model->config.num_heads) *
                                                               (a.q_head_dim() + a.v_head_dim);
    std::printf("MLA: %lld values per token and layer in the cache (latent %d + rope key %d); the same model's MHA "
                "cache would hold %lld (%d heads x (%d + %d)): %.1fx more\n",
                static_cast<long long>(latent), a.kv_lora_rank, a.rope_dim, static_cast<long long>(mha),
                model->config.num_heads, a.q_head_dim(), a.v_head_dim,
                static_cast<double>(mha) / static_cast<double>(latent));
  }
  std::fprintf(stderr, "%s: context %d, batch %d, %d decode steps, fill %s%s\n", what.c_str(), f.context_len, f.batch,
               f.output_len, f.fill.c_str(),
               f.fill == "synthetic" ? " (caches filled with seeded random K/V: speed figures only)" : "");
  std::vector<LongRow> rows;
  for (const auto& [name, cfg] : runs) {
    rows.push_back(run_one(*model, cfg, name, f));
    std::fprintf(stderr, "  %s: %.1f tokens/s (%.1f s to fill)\n", name.c_str(), rows.back().decode_tps,
                 rows.back().fill_s);
  }
  nlohmann::json j = {{"model", what}, {"context_len", f.context_len}, {"batch", f.batch}, {"output_len", f.output_len},
                      {"fill", f.fill}, {"threads", base.threads}, {"rows", nlohmann::json::array()}};
  for (const auto& r : rows) {
    j["rows"].push_back({{"config", r.name}, {"decode_tokens_per_s", r.decode_tps}, {"ms_per_step", r.ms_per_step},
                         {"kv_bytes_per_token", r.kv_bytes_per_token}, {"peak_kv_bytes", r.peak_kv_bytes},
                         {"end_kv_bytes_per_seq", r.end_kv_bytes_per_seq},
                         {"end_record_bytes_per_seq", r.end_record_bytes_per_seq},
                         {"peak_rss_mib", r.peak_rss_mib}, {"sparse_share", r.sparse_share},
                         {"decode_shares", r.decode_shares},
                         {"speedup", r.decode_tps / rows[0].decode_tps},
                         {"kv_reduction", static_cast<double>(rows[0].peak_kv_bytes) / std::max<int64_t>(1, r.peak_kv_bytes)}});
  }
  if (f.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("%s, context %d x batch %d, %d decode steps, %s fill, %d threads\n", what.c_str(), f.context_len, f.batch,
              f.output_len, f.fill.c_str(), base.threads);
  std::printf("| config | decode tok/s | ms/step | speedup | peak KV MiB | KV smaller | KV/seq at end (bytes) | "
              "records/seq at end (bytes) | peak RSS MiB | sparse share |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : rows) {
    std::printf("| %s | %.1f | %.2f | %.2fx | %.1f | %.2fx | %lld | %lld | %.0f | %.1f%% |\n", r.name.c_str(),
                r.decode_tps, r.ms_per_step, r.decode_tps / rows[0].decode_tps, r.peak_kv_bytes / 1048576.0,
                static_cast<double>(rows[0].peak_kv_bytes) / std::max<int64_t>(1, r.peak_kv_bytes),
                static_cast<long long>(r.end_kv_bytes_per_seq), static_cast<long long>(r.end_record_bytes_per_seq),
                r.peak_rss_mib, 100 * r.sparse_share);
  }
  return 0;
}

}  // namespace slimkv
