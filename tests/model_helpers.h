// Test helpers: load a model from ../shared and run greedy generation / teacher-forced NLL in-process.
#pragma once
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "runner/generator.h"
#include "runner/sequence_forward.h"
#include "test_paths.h"

namespace slimkv::test {

inline std::unique_ptr<Model> load(const std::string& path, const std::string& tok = "") {
  ModelLoadOptions o;
  o.model_path = path;
  o.tokenizer_path = tok;
  return load_model(o);
}

inline std::vector<int32_t> greedy(const Model& m, const std::vector<int32_t>& prompt, int32_t n,
                                   ThreadPool* pool = nullptr) {
  GenerateOptions o;
  o.max_new_tokens = n;
  o.stop_at_eos = false;
  std::vector<int32_t> out;
  generate(m, pool, prompt, o, [&](int32_t id) {
    out.push_back(id);
    return true;
  });
  return out;
}

inline double mean_nll(const Model& m, const std::vector<int32_t>& ids) {
  SequenceForward fwd(m, nullptr, static_cast<int32_t>(ids.size()));
  std::vector<float> logits(ids.size() * m.config.vocab_size);
  fwd.forward(ids, 0, true, logits.data());
  double nll = 0;
  for (size_t t = 0; t + 1 < ids.size(); ++t) {
    const float* row = logits.data() + t * m.config.vocab_size;
    double mx = row[0], sum = 0;
    for (int32_t i = 0; i < m.config.vocab_size; ++i) mx = std::max<double>(mx, row[i]);
    for (int32_t i = 0; i < m.config.vocab_size; ++i) sum += std::exp(row[i] - mx);
    nll += std::log(sum) + mx - row[ids[t + 1]];
  }
  return nll / static_cast<double>(ids.size() - 1);
}

inline nlohmann::json golden() {
  return nlohmann::json::parse(read_text_file(models_dir() + "/golden_reference.json"));
}

// Expects constructing an Engine with cfg to fail with an Error whose message contains needle.
template <typename EngineT, typename ConfigT>
void expect_engine_error(const Model& m, const ConfigT& cfg, const std::string& needle) {
  try {
    EngineT e(m, cfg);
    ADD_FAILURE() << "expected an error containing " << needle;
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find(needle), std::string::npos) << err.what();
  }
}


}  // namespace slimkv::test
