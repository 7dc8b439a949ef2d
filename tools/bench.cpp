// `slimkv bench`: single-stream prefill and decode tokens/s for real models (../shared/models) and
// synthetic shapes, at each thread count, medians of --repeats runs. A benchmark, not a test.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "kernels/matmul.h"
#include "runner/sequence_forward.h"
#include "model/synthetic_model.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct BenchFlags {
  std::vector<std::string> models;     // paths; default: the shared models
  std::vector<std::string> synthetic;  // shape names
  std::vector<std::string> dtypes = {"f32"};
  std::vector<int32_t> threads = {1, 2};
  int32_t prompt_len = 128, gen_len = 128, repeats = 5;
  int32_t depth_tokens = 0;          // tokens in the cache before each test, untimed (llama-bench -d)
  std::string kv_cache_dtype = "f32";  // the cache's storage dtype (llama-bench -ctk / -ctv)
  bool json = false;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  std::string model;
  int32_t threads, depth_tokens;
  double pp_tps, tg_tps;
  int64_t weight_bytes_per_token;
};

// Bytes of weight matrices one decode step reads (every layer's matrices and the classifier; the embedding table
// is a one-row lookup). MoE experts count in full: an upper bound there.
int64_t weight_bytes_per_token(const Model& m) {
  int64_t total = weight_view_bytes(m.output) + weight_view_bytes(m.hc_head_fn);
  for (const LayerWeights& l : m.layers) {
    for (const WeightView* w : const_cast<LayerWeights&>(l).matrices()) total += weight_view_bytes(*w);
  }
  return total;
}

Row bench_one(const Model& m, const std::string& label, int32_t threads, const BenchFlags& f) {
  using clock = std::chrono::steady_clock;
  ThreadPool pool(threads);
  const ModelConfig& c = m.config;
  // As llama-bench: pp = one forward of P prompt tokens, tg = N single-token decode steps, each after depth_tokens
  // already in the cache (0: from an empty cache). The depth is filled once, untimed, and each run overwrites the
  // positions after it. Prefill runs in chunks of up to 512 tokens (llama-bench's default ubatch).
  const int32_t depth = f.depth_tokens;
  const int32_t pp = std::min(f.prompt_len, c.max_seq_len - depth), tg = std::min(f.gen_len, c.max_seq_len - depth);
  SLIMKV_CHECK(pp >= 0 && tg >= 0, "bench: --depth {} leaves no room in the model's {} positions", depth, c.max_seq_len);
  CompressionConfig cache;
  cache.kv_cache_dtype = f.kv_cache_dtype;
  SequenceForward fwd(m, &pool, depth + std::max({pp, tg, 1}), 16, 512, cache);
  std::vector<float> logits(c.vocab_size);
  auto tokens = [&](int32_t n, int32_t seed) {
    std::vector<int32_t> ids(n);
    for (int32_t i = 0; i < n; ++i) ids[i] = ((i + seed) * 7919 + 1) % c.vocab_size;
    return ids;
  };
  if (depth > 0) fwd.forward(tokens(depth, 3), 0, false, logits.data());
  const std::vector<int32_t> prompt = tokens(pp, 0);
  std::vector<double> pps, tgs;
  for (int32_t r = depth > 0 ? 1 : 0; r < f.repeats + 1; ++r) {  // from an empty cache the first run warms up
    auto t0 = clock::now();
    if (pp > 0) fwd.forward(prompt, depth, false, logits.data());
    auto t1 = clock::now();
    int32_t tok = 1 % c.vocab_size;
    for (int32_t i = 0; i < tg; ++i) {
      int32_t one[1] = {tok};
      fwd.forward(one, depth + i, false, logits.data());
      tok = argmax(logits.data(), c.vocab_size);
    }
    auto t2 = clock::now();
    if (r == 0) continue;
    pps.push_back(pp > 0 ? pp / std::chrono::duration<double>(t1 - t0).count() : 0.0);
    tgs.push_back(tg > 0 ? tg / std::chrono::duration<double>(t2 - t1).count() : 0.0);
  }
  return {label, threads, depth, median(pps), median(tgs), weight_bytes_per_token(m)};
}

int run_bench(const BenchFlags& f) {
  std::vector<std::pair<std::string, std::unique_ptr<Model>>> models;
  std::vector<std::string> paths = f.models;
  if (paths.empty() && f.synthetic.empty()) {
    std::string dir = std::filesystem::path(default_model_path()).parent_path().parent_path().string();
    for (const char* p : {"stories260K/stories260K.bin", "stories260K/stories260K.gguf", "tinystories-656k",
                          "babyllama-char105/model5000.bin", "aidreams260K/aidreams260K.bin", "kjv-1k/model.bin"}) {
      if (std::filesystem::exists(dir + "/" + p)) paths.push_back(dir + "/" + p);
    }
  }
  for (const auto& p : paths) {
    ModelFlags mf;
    mf.model = p;
    std::filesystem::path fp(p);
    std::string label = std::filesystem::is_directory(fp) ? fp.filename().string()
                                                          : (fp.parent_path().filename() / fp.filename()).string();
    models.emplace_back(label, load_model_from_flags(mf));
  }
  for (const auto& s : f.synthetic) {
    for (const auto& d : f.dtypes) models.emplace_back(s + " " + d + " (random weights)", make_synthetic_model(s, parse_dtype(d)));
  }
  nlohmann::json rows = nlohmann::json::array();
  if (!f.json) {
    std::printf("isa %s, pp%d / tg%d (each after %d tokens in a %s cache, as llama-bench -d), median of %d runs\n",
                std::string(isa_name(active_isa())).c_str(), f.prompt_len, f.gen_len, f.depth_tokens,
                f.kv_cache_dtype.c_str(), f.repeats);
    std::printf("| model | threads | pp tokens/s | tg tokens/s |\n|---|---|---|---|\n");
  }
  for (auto& [label, m] : models) {
    for (int32_t t : f.threads) {
      Row r = bench_one(*m, label, t, f);
      if (f.json) {
        rows.push_back({{"model", r.model}, {"threads", r.threads}, {"depth", r.depth_tokens},
                        {"prefill_tps", r.pp_tps}, {"decode_tps", r.tg_tps},
                        {"weight_bytes_per_token", r.weight_bytes_per_token}});
      } else {
        std::printf("| %s | %d | %.0f | %.0f |\n", r.model.c_str(), r.threads, r.pp_tps, r.tg_tps);
        std::fflush(stdout);
      }
    }
  }
  if (f.json) std::printf("%s\n", rows.dump(1).c_str());
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<BenchFlags>();
  auto* sub = app.add_subcommand("bench", "Single-stream prefill/decode speed (a benchmark, not a test)");
  sub->add_option("-m,--model", f->models, "Model paths (default: every model in ../shared/models)");
  sub->add_option("--synthetic", f->synthetic, "Synthetic shapes: llama-260k, llama-15m, llama-110m, llama-1b, deepseek-v2-lite");
  sub->add_option("--dtype", f->dtypes, "Weight dtypes for synthetic shapes (any weight type: f32 f16 q8_0 q4_k ...)");
  sub->add_option("--threads", f->threads, "Thread counts to measure")->check(CLI::Range(1, 1024));
  sub->add_option("-p,--prompt-len", f->prompt_len, "Prompt tokens (prefill; 0: none)")->check(CLI::Range(0, 1 << 20));
  sub->add_option("-n,--gen-len", f->gen_len, "Generated tokens (decode; 0: none)")->check(CLI::Range(0, 1 << 20));
  sub->add_option("-d,--depth", f->depth_tokens, "Tokens in the cache before each test, untimed (llama-bench -d)")
      ->check(CLI::Range(0, 1 << 20));
  sub->add_option("--kv-cache-dtype", f->kv_cache_dtype, "The cache's storage dtype: f32 | f16 | int8 | int4 | tq4 | tq3")
      ->check(CLI::IsMember({"f32", "f16", "int8", "int4", "tq4", "tq3"}));
  sub->add_option("-r,--repeats", f->repeats, "Runs per row (median)")->check(CLI::Range(1, 1000));
  sub->add_flag("--json", f->json, "Print JSON");
  out.push_back({sub, [f] { return run_bench(*f); }});
  add_bench_offline_command(*sub, out);
  add_bench_serve_command(*sub, out);
  add_bench_make_gguf_command(*sub, out);
  add_bench_bandwidth_command(*sub, out);
  add_bench_attention_command(*sub, out);
  add_bench_all_reduce_command(*sub, out);
}

}  // namespace slimkv
