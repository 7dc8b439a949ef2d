// Configuration sanity checks for `doctor`: an engine + compression configuration against a model's shape — the
// validation errors themselves, and settings that are legal but do nothing or work against each other.
// Must not know: servers or metrics.
#pragma once
#include <vector>

#include "engine/engine_config.h"
#include "model/model_config.h"
#include "ops/diagnosis.h"

namespace slimkv {

std::vector<Finding> lint_config(const EngineConfig& cfg, const ModelConfig& model);

}  // namespace slimkv
