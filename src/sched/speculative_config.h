// Speculative decoding's configuration (issue SD; vLLM's `--speculative-config` JSON: `method` (ngram |
// draft_model | mtp: the model's own MTP head), `model`, `num_speculative_tokens`, `prompt_lookup_min`, `prompt_lookup_max`), parsed once; and which requests may
// speculate this step. Must not know: models or the cache's bytes.
#pragma once
#include <cstdint>
#include <string>

#include "sampling/ngram_proposer.h"

namespace slimkv {

struct Request;

struct SpeculativeConfig {
  std::string method;                  // "" (off), "ngram", "draft_model" or "mtp"
  std::string draft_model;             // "model": the draft model's path (draft_model)
  NgramProposerConfig ngram;           // num_speculative_tokens (every method), prompt_lookup_min / _max (ngram)
  bool adaptive = true;                // "adaptive": drafts only while they measure faster (spec_governor.h)
  bool on() const { return !method.empty(); }
  // From --speculative-config's JSON ("" = off); throws Error naming the field.
  static SpeculativeConfig from_json(const std::string& json);
};

// Whether r may speculate now: not opted out, unconstrained, no penalties, logprobs, pooling or min_tokens, decoding
// (its prompt computed and a token sampled); greedy or sampled. The engine also requires a layout speculation may
// roll back.
bool may_speculate(const Request& r);
// Whether r could ever speculate (may_speculate's conditions that never change: not opted out, unconstrained, no
// penalties, logprobs or pooling) — an MTP head is fed only such requests' rows.
bool may_ever_speculate(const Request& r);

}  // namespace slimkv
