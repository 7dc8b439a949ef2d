// POST /tokenize and POST /detokenize (vLLM's request and response shapes) over the served model's tokenizer and
// chat template: the token ids generation would see for a prompt or a chat, and the text of given ids.
// Must not know: HTTP or the engine.
#pragma once
#include <nlohmann/json.hpp>

#include "server/generation_session.h"
#include "server/openai_request.h"

namespace slimkv {

// {"tokens": [...], "count": N, "max_model_len": N, "token_strs": [...] | null}; ApiError 400 as generation's
// prompt checks (a text far past the context, a chat the template refuses).
nlohmann::json tokenize_json(const ServeContext& ctx, const TokenizeRequest& req);
// {"prompt": text}; ApiError 400 (param `tokens`) for an id outside the vocabulary.
nlohmann::json detokenize_json(const ServeContext& ctx, const DetokenizeRequest& req);

}  // namespace slimkv
