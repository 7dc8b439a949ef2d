// Runs a model over token windows and turns the observed K/V second moments into a Calibration (low-rank bases,
// explained variance), as `slimkv calibrate` and `tune` need. Must not know: command lines or files.
#pragma once
#include <functional>
#include <vector>

#include "compress/calibration.h"
#include "core/thread_pool.h"
#include "model/model.h"

namespace slimkv {

// progress(done_tokens, total_tokens) after each window (may be empty).
Calibration calibrate_model(const Model& model, ThreadPool* pool, const std::vector<int32_t>& ids, int32_t ctx,
                            const std::function<void(size_t, size_t)>& progress = {});

}  // namespace slimkv
