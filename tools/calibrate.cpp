// `slimkv calibrate`: runs the model over real text, accumulates the second moments of post-RoPE keys and of
// values per layer and KV head, and writes their eigenbases (largest first) with the explained-variance curve to a
// versioned file bound to the model's fingerprint, with the per-layer attention profile and retention sensitivity.
// Low-rank K/V (--kv-compression-rank ...) and --kv-sparse-schedule auto read it.
#include <unistd.h>

#include <cstdio>

#include "compress/attention_profile.h"
#include "compress/calibration.h"
#include "core/mapped_file.h"
#include "model/kv_projection.h"
#include "ops/calibration_run.h"
#include "runner/sequence_forward.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct CalibrateFlags {
  ModelFlags model;
  std::string data, out;
  int32_t max_tokens = 16384, ctx = 0;
};

int run_calibrate(const CalibrateFlags& f) {
  auto model = load_model_from_flags(f.model);
  const ModelConfig& c = model->config;
  const int32_t ctx = f.ctx > 0 ? std::min(f.ctx, c.max_seq_len) : c.max_seq_len;
  std::vector<int32_t> ids = model->tokenizer->encode(read_text_file(f.data), true);
  if (static_cast<int32_t>(ids.size()) > f.max_tokens) ids.resize(f.max_tokens);
  SLIMKV_CHECK(ids.size() >= 2, "{}: too little text to calibrate on", f.data);
  ThreadPool pool(resolve_threads(f.model.threads));
  const bool progress = ::isatty(2);
  Calibration cal = calibrate_model(*model, &pool, ids, ctx, [&](size_t done, size_t total) {
    if (progress) std::fprintf(stderr, "\rcalibrating: %zu / %zu tokens", done, total);
  });
  if (progress) std::fprintf(stderr, "\n");
  cal.save(f.out);
  std::printf("calibrated on %lld tokens; wrote %s\n", static_cast<long long>(cal.num_tokens), f.out.c_str());
  std::printf("explained variance by rank (keys | values), averaged over KV heads:\nlayer");
  std::vector<int32_t> ranks;
  for (int32_t r = c.head_dim / 8; r <= c.head_dim; r *= 2) {
    if (r > 0) ranks.push_back(r);
  }
  for (int32_t r : ranks) std::printf("  r=%-3d K    V   ", r);
  std::printf("\n");
  for (int32_t l = 0; l < c.num_layers; ++l) {
    std::printf("%5d", l);
    for (int32_t r : ranks) std::printf("  %5.3f %5.3f", cal.explained(l, r, true), cal.explained(l, r, false));
    std::printf("\n");
  }
  if (!cal.attention.empty()) {
    std::printf("\nattention profile (mean mass of the k most-attended %d-token blocks, per query head) and retention "
                "sensitivity (mean KL when only that layer keeps %d tokens; --kv-sparse-schedule auto):\nlayer",
                cal.attention.block_tokens, cal.sensitivity_tokens);
    const std::vector<int32_t> ks = {1, 4, 16, 64};
    for (int32_t k : ks) std::printf("  k=%-3d", k);
    std::printf("  sensitivity\n");
    for (int32_t l = 0; l < c.num_layers; ++l) {
      std::printf("%5d", l);
      for (int32_t k : ks) std::printf("  %5.3f", cal.attention.mass_at(l, static_cast<double>(k) * cal.attention.block_tokens));
      if (!cal.layer_sensitivity.empty()) std::printf("  %.5f", cal.layer_sensitivity[l]);
      std::printf("\n");
    }
  }
  if (cal.attention.read_steps > 0) {  // what select's per-head budgets (--kv-sparse-schedule auto) start from
    const AttentionProfile& a = cal.attention;
    std::printf("\nper KV head: the share of a query's context whose most attended rows (with %d sinks and a %d-token "
                "window) hold 95%% of its mass\nlayer  heads\n", kProfileSinks, kProfileWindow);
    for (int32_t l = 0; l < c.num_layers; ++l) {
      std::printf("%5d", l);
      for (int32_t h = 0; h < c.num_kv_heads; ++h) {
        int32_t s = 1;
        while (s < a.read_steps && a.head_read_mass[l][static_cast<size_t>(h) * a.read_steps + s - 1] < 0.95f) ++s;
        std::printf("  %5.3f", static_cast<double>(s) / a.read_steps);
      }
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace

void add_calibrate_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<CalibrateFlags>();
  auto* sub = app.add_subcommand("calibrate", "Compute low-rank K/V bases from real text");
  add_model_flags(sub, f->model);
  sub->add_option("--data", f->data, "Text file")->required();
  sub->add_option("-o,--output", f->out, "Calibration file to write")->required();
  sub->add_option("--max-tokens", f->max_tokens, "Tokens of the text to use")->check(CLI::Range(2, 1 << 30));
  sub->add_option("--ctx", f->ctx, "Window length (default: the model's context)")->check(CLI::Range(0, 1 << 24));
  out.push_back({sub, [f] { return run_calibrate(*f); }});
}

}  // namespace slimkv
