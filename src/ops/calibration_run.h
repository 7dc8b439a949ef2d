// Runs a model over token windows and turns the observed K/V second moments into a Calibration (low-rank bases,
// explained variance), its queries/keys into the attention profile (the first profile_tokens tokens) and measures
// each layer's retention sensitivity, as `slimkv calibrate` and `tune` need. Must not know: command lines or files.
#pragma once
#include <functional>
#include <vector>

#include "compress/calibration.h"
#include "core/thread_pool.h"
#include "model/model.h"

namespace slimkv {

// progress(done_tokens, total_tokens) after each window (may be empty).
Calibration calibrate_model(const Model& model, ThreadPool* pool, const std::vector<int32_t>& ids, int32_t ctx,
                            const std::function<void(size_t, size_t)>& progress = {}, int32_t profile_tokens = 4096,
                            int32_t sensitivity_tokens = 2048);
// The auto retention schedule's input: per full-attention layer, the mean KL of the next-token distributions when
// only that layer evicts down to sinks + window + window tokens (window = ctx / 16), the others keeping all, over
// the first num_tokens tokens (teacher-forced, as `eval`). Fills cal.layer_sensitivity.
void measure_layer_sensitivity(const Model& model, ThreadPool* pool, const std::vector<int32_t>& ids, int32_t ctx,
                               int32_t num_tokens, Calibration& cal);

}  // namespace slimkv
