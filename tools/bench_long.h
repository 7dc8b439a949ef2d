// Long-context decode benchmark behind `bench offline --context-len` (tools/bench_long.cpp).
#pragma once
#include <string>
#include <vector>

#include "engine/engine_config.h"
#include "tools/common.h"

namespace slimkv {

struct LongContextFlags {
  int32_t context_len = 0, batch = 8, output_len = 64;
  std::vector<std::string> configs;  // --config: compression configs measured beside the baseline
  std::string fill = "real";         // real | synthetic
  std::string synthetic, dtype = "f32";
  uint64_t seed = 0;
  bool json = false;
};

int run_long_context(const LongContextFlags& f, const ModelFlags& model, EngineConfig base);

}  // namespace slimkv
