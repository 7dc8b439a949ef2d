// One /v1/embeddings request through the engine: each input tokenized as generation does (BOS included), one
// pooled engine request per input (RequestParams::pooling; batched with everything else running), the pooled
// states L2-normalised (llama.cpp's default) and written in OpenAI's list shape, as floats or base64.
// Must not know: HTTP (the caller passes whether its client is gone).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "server/embeddings_request.h"
#include "server/generation_session.h"

namespace slimkv {

// The response body; ApiError 400 (no pooling configured, a wrong `dimensions`, an input past the context or the
// vocabulary), 429 (queue full), 499 (client gone), 503 (ended by a drain), 504 (--request-timeout).
// lora: the adapter the request's `model` named (null: the base model).
std::string run_embeddings(const ServeContext& ctx, const EmbeddingsRequest& req,
                           const std::function<bool()>& client_gone, std::shared_ptr<const LoraAdapter> lora = nullptr);

// v / |v| (a zero vector stays zero).
void l2_normalize(std::vector<float>& v);
// The little-endian float32 bytes of v, base64 (OpenAI's encoding_format "base64").
std::string base64_floats(const std::vector<float>& v);

}  // namespace slimkv
