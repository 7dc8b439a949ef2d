// POST /v1/embeddings' body (OpenAI's shape) as plain data: `input` (a string, strings, token ids or lists of
// them), `model`, `encoding_format` (float | base64), `dimensions` (only the model's own width is accepted).
// Must not know: the tokenizer, the engine or HTTP.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace slimkv {

struct EmbeddingsRequest {
  std::string model;                   // empty = not given (accepted)
  std::vector<PromptInput> inputs;     // >= 1
  bool base64 = false;                 // encoding_format "base64": little-endian float32, base64
  std::optional<int64_t> dimensions;   // checked against the model's width by the session
};

// ApiError 400 naming the field for a wrong type, an empty input or an unknown encoding_format.
EmbeddingsRequest parse_embeddings_request(const nlohmann::ordered_json& body);

}  // namespace slimkv
