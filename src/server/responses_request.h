// POST /v1/responses (OpenAI's Responses API) as the chat request it is: `input` (a string or items: messages,
// function_call, function_call_output, reasoning), `instructions`, function `tools` / `tool_choice`, `text.format`,
// `reasoning`, `max_output_tokens`, `previous_response_id` (the stored conversation put before the input) rewritten
// as an OpenAI chat body that parse_chat_request validates like any other. Every refusal is a 400 naming the field.
// Must not know: the engine, the tokenizer or HTTP.
#pragma once
#include <nlohmann/json.hpp>

#include "server/response_store.h"

namespace slimkv {

struct ResponsesRequest {
  nlohmann::ordered_json chat_body;     // what parse_chat_request reads
  nlohmann::ordered_json conversation;  // the stored turns before this one and this input, as chat messages
  nlohmann::ordered_json echo;          // the request's settings a Response object repeats (tools, text, ...)
  bool store = true;                    // keep this response for a later previous_response_id
};

// Throws ApiError (400) naming the field; an unknown or expired previous_response_id is a 400 naming it.
ResponsesRequest responses_to_chat_body(const nlohmann::ordered_json& body, ResponseStore& store);

}  // namespace slimkv
