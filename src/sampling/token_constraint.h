// What a sequence's next token may be (structured output): an interface the engine consults per sampled token —
// sample first and check, mask the row only when the sample is refused (exact: the second draw is from the masked
// distribution) — then advances with the chosen token. Must not know: grammars, schemas or tokenizers (the server
// implements it over grammar/).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

namespace slimkv {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  virtual bool accepts(int32_t token) const = 0;                // the token keeps the output valid
  virtual void mask(float* logits, int32_t vocab_size) const = 0;  // -inf on every refused token
  virtual void advance(int32_t token) = 0;                      // the token was emitted
};

// Made once per sequence (each choice of a request has its own state).
using TokenConstraintFactory = std::function<std::unique_ptr<TokenConstraint>()>;

}  // namespace slimkv
