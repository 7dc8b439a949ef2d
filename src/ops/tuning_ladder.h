// The seed's tuning ladder (4.3) as a procedure: baseline -> low rank at head_dim/2 (raised while quality drops
// too much) -> sparse retention at K = 512, 256, 128 (stopping at the knee) -> deeper layers compressed harder ->
// int8 / int4 (a natively compressed model, DeepSeek-V4: cache dtype f16 -> int8 -> int4, then the indexer's top-k
// halved while quality holds). Every rung is measured with the QualityEvaluator and kept only within the quality limit.
// Must not know: command lines or files (the caller writes the config, the report and the chart).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ops/quality_eval.h"

namespace slimkv {

struct TuneOptions {
  double max_quality_drop = 0.02;          // --max-quality-drop: on max(1 − top-1 agreement, perplexity change)
  std::string calibration;                 // low rank needs one ("" = skip the low-rank rungs)
  std::vector<int32_t> topk = {512, 256, 128};  // used when smaller than the context, else ctx/2, ctx/4, ctx/8
  bool quantize = true;                    // try int8, then int4
};

struct TuneStep {
  std::string stage, description;
  CompressionConfig config;
  QualityResult quality;
  double drop = 0;
  bool accepted = false;
};

struct TuneResult {
  std::vector<TuneStep> steps;             // in the order run; steps[0] is the baseline
  int32_t chosen = 0;                      // the accepted step with the fewest KV bytes
};

double quality_drop(const QualityResult& r);  // max(1 − top-1 agreement, perplexity change), >= 0
// on_step: called after each measured step (progress).
TuneResult run_tuning_ladder(QualityEvaluator& ev, const ModelConfig& model, const TuneOptions& opt,
                             const std::function<void(const TuneStep&)>& on_step = {});
std::string tuning_report_markdown(const TuneResult& r, const TuneOptions& opt);

}  // namespace slimkv
