#include "sched/speculative_config.h"

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "sched/request.h"

namespace slimkv {

SpeculativeConfig SpeculativeConfig::from_json(const std::string& json) {
  SpeculativeConfig c;
  if (json.empty()) return c;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const std::exception& e) {
    fail("--speculative-config: not JSON: {}", e.what());
  }
  SLIMKV_CHECK(j.is_object(), "--speculative-config: a JSON object is needed");
  for (const auto& [key, v] : j.items()) {
    if (key == "method") {
      SLIMKV_CHECK(v.is_string() && (v == "ngram" || v == "draft_model" || v == "mtp"), "--speculative-config: "
                   "method must be \"ngram\", \"draft_model\" or \"mtp\"");
      c.method = v.get<std::string>();
    } else if (key == "model") {
      SLIMKV_CHECK(v.is_string() && !v.get<std::string>().empty(), "--speculative-config: model must be a path");
      c.draft_model = v.get<std::string>();
    } else if (key == "adaptive") {
      SLIMKV_CHECK(v.is_boolean(), "--speculative-config: adaptive must be true or false");
      c.adaptive = v.get<bool>();
    } else if (key == "num_speculative_tokens" || key == "prompt_lookup_min" || key == "prompt_lookup_max") {
      SLIMKV_CHECK(v.is_number_integer(), "--speculative-config: {} must be an integer", key);
      const int32_t n = v.get<int32_t>();
      if (key == "num_speculative_tokens") c.ngram.num_speculative_tokens = n;
      else if (key == "prompt_lookup_min") c.ngram.min_n = n;
      else c.ngram.max_n = n;
    } else {
      fail("--speculative-config: unknown field \"{}\" (method, model, num_speculative_tokens, prompt_lookup_min, "
           "prompt_lookup_max, adaptive)", key);
    }
  }
  if (c.method.empty() && !c.draft_model.empty()) c.method = "draft_model";  // vLLM: a model implies its method
  SLIMKV_CHECK(c.on(), "--speculative-config: \"method\" is needed");
  SLIMKV_CHECK((c.method == "draft_model") == !c.draft_model.empty(), "--speculative-config: \"model\" (a draft "
               "model's path) goes with method \"draft_model\", and only with it");
  c.ngram.validate();
  return c;
}

bool may_ever_speculate(const Request& r) {
  const RequestParams& p = r.params;
  return p.speculative && !p.sampling.has_penalties() && !r.constraint && p.logprobs < 0 && p.pooling == Pooling::None;
}

bool may_speculate(const Request& r) {
  return may_ever_speculate(r) && r.num_output_tokens() >= std::max(1, r.params.min_tokens) &&
         r.num_computed_tokens == r.num_tokens() - 1;
}

}  // namespace slimkv
