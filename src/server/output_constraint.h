// Structured output for the server: compiles a request's constraint (response_format, guided_*, a forced tool
// call's arguments) with grammar/ and hands the engine a TokenConstraintFactory — one grammar Matcher per choice
// over the model's vocabulary (each token's bytes, built once on first use). Must not know: HTTP or the engine's
// batching (it only implements sampling's TokenConstraint).
#pragma once
#include <memory>
#include <mutex>
#include <vector>

#include <nlohmann/json.hpp>

#include "sampling/token_constraint.h"
#include "server/structured_output_request.h"
#include "server/tool_request.h"

namespace slimkv {

class Tokenizer;
namespace grammar {
struct Grammar;
class TokenVocabulary;
}  // namespace grammar

class OutputConstraints {
 public:
  // eos_ids: the tokens that may end a complete output (the tokenizer's EOS, the chat's end-of-turn tokens).
  OutputConstraints(const Tokenizer& tok, std::vector<int32_t> eos_ids);
  ~OutputConstraints();
  // An empty factory for kNone; a 400 (ApiError naming the request's field) for a constraint grammar/ refuses.
  TokenConstraintFactory for_output(const StructuredOutput& out) const;
  // tool_choice required / named, as vLLM forces them: the output is JSON — named: the function's arguments (its
  // `parameters` schema); required: [{"name": ..., "parameters": {...}}, ...] over the tools (one item without
  // parallel_tool_calls). An empty factory for none / auto.
  TokenConstraintFactory for_tool_choice(const ToolRequest& tools) const;
  // Any compiled grammar.
  TokenConstraintFactory for_grammar(std::shared_ptr<const grammar::Grammar> g) const;

 private:
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary() const;  // built once, thread-safe

  const Tokenizer& tok_;
  std::vector<int32_t> eos_ids_;
  mutable std::once_flag once_;
  mutable std::shared_ptr<const grammar::TokenVocabulary> vocab_;
};

}  // namespace slimkv
