// `slimkv tune`: walks the seed's tuning ladder (ops/tuning_ladder.h) on real text and writes the recommended
// config (-o BEST.json), a markdown report of the path taken (BEST.md) and quality vs bytes (BEST.svg).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/mapped_file.h"
#include "ops/calibration_run.h"
#include "ops/svg_chart.h"
#include "ops/tuning_ladder.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct TuneFlags {
  ModelFlags model;
  std::string data, passkey, calib, out;
  std::string max_drop = "2%";
  int32_t max_tokens = 4096, max_passkey = 10, ctx = 0;
  bool no_quant = false;
};

double parse_percent(const std::string& s) {
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used < s.size() && s.substr(used) == "%") v /= 100;
    else SLIMKV_CHECK(used == s.size(), "");
    SLIMKV_CHECK(v >= 0 && v < 1, "");
    return v;
  } catch (...) {
    fail("--max-quality-drop {}: expected a share such as 2% or 0.02", s);
  }
}

int run_tune(const TuneFlags& f) {
  auto model = load_model_from_flags(f.model);
  const ModelConfig& c = model->config;
  const int32_t ctx = f.ctx > 0 ? std::min(f.ctx, c.max_seq_len) : c.max_seq_len;
  TuneOptions opt;
  opt.max_quality_drop = parse_percent(f.max_drop);
  opt.quantize = !f.no_quant;
  std::vector<int32_t> ids = model->tokenizer->encode(read_text_file(f.data), true);
  ThreadPool pool(resolve_threads(f.model.threads));
  const std::filesystem::path out(f.out);
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  std::filesystem::path stem = out;
  stem.replace_extension();
  opt.calibration = f.calib;
  if (opt.calibration.empty() && static_cast<int32_t>(ids.size()) > f.max_tokens + 64) {
    // Calibrate on the text after the scored part, so the scored tokens are not the calibration tokens.
    std::vector<int32_t> rest(ids.begin() + f.max_tokens, ids.end());
    if (rest.size() > 16384) rest.resize(16384);
    opt.calibration = stem.string() + ".calib";
    calibrate_model(*model, &pool, rest, ctx).save(opt.calibration);
    std::fprintf(stderr, "tune: calibrated low-rank bases on %zu held-out tokens -> %s\n", rest.size(),
                 opt.calibration.c_str());
  } else if (opt.calibration.empty()) {
    std::fprintf(stderr, "tune: no --calib and too little held-out text to calibrate: skipping the low-rank rungs\n");
  }
  if (static_cast<int32_t>(ids.size()) > f.max_tokens) ids.resize(f.max_tokens);
  QualityEvaluator ev(*model, &pool, ids, ctx, f.passkey, f.max_passkey);
  TuneResult r = run_tuning_ladder(ev, c, opt, [](const TuneStep& s) {
    std::fprintf(stderr, "tune: %-14s %-48s %6.1f%% of f16  top-1 %6.2f%%  drop %5.2f%%  %s\n", s.stage.c_str(),
                 s.description.c_str(), 100 * s.quality.ratio_vs_f16, 100 * s.quality.top1_agreement, 100 * s.drop,
                 s.accepted ? "kept" : "over the limit");
  });
  const TuneStep& best = r.steps[r.chosen];
  std::ofstream(out) << best.config.to_json("slimkv tune: " + best.description);
  const std::string report = tuning_report_markdown(r, opt);
  std::ofstream(stem.string() + ".md") << report;
  LineSeries kept{"kept", {}, true}, over{"over the limit", {}, true, false};
  for (const auto& s : r.steps) {
    (s.accepted ? kept : over).points.push_back({s.quality.ratio_vs_f16, 100 * s.quality.top1_agreement});
  }
  std::sort(kept.points.begin(), kept.points.end());
  const std::pair<double, double> mark{best.quality.ratio_vs_f16, 100 * best.quality.top1_agreement};
  std::ofstream(stem.string() + ".svg") << svg_lines({"slimkv tune: quality vs KV bytes", "KV bytes vs f16",
                                                      "top-1 agreement (%)"},
                                                     {kept, over}, &mark, "chosen");
  std::printf("%s\nwrote %s, %s.md, %s.svg\n", report.c_str(), f.out.c_str(), stem.string().c_str(),
              stem.string().c_str());
  return 0;
}

}  // namespace

void add_tune_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<TuneFlags>();
  auto* sub = app.add_subcommand("tune", "Walk the tuning ladder (conservative -> aggressive) and pick a config");
  add_model_flags(sub, f->model);
  sub->add_option("--data", f->data, "Text to score on (the part after --max-tokens calibrates low rank)")->required();
  sub->add_option("--passkey", f->passkey, "Passkey JSONL, reported per step");
  sub->add_option("--max-passkey", f->max_passkey, "Passkey prompts per step");
  sub->add_option("--max-quality-drop", f->max_drop, "Largest acceptable drop, e.g. 2% (default)");
  sub->add_option("--calib", f->calib, "Calibration file (default: calibrated here on held-out text)");
  sub->add_option("--max-tokens", f->max_tokens, "Tokens scored per step")->check(CLI::Range(64, 1 << 24));
  sub->add_option("--ctx", f->ctx, "Window length (default: the model's context)");
  sub->add_flag("--no-quant", f->no_quant, "Skip the int8/int4 rungs");
  sub->add_option("-o,--output", f->out, "Recommended config to write (also writes .md and .svg beside it)")->required();
  out.push_back({sub, [f] { return run_tune(*f); }});
}

}  // namespace slimkv
