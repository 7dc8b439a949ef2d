// POST /v1/messages (Anthropic's Messages API) as the chat request it is: the body checked field by field and
// rewritten as an OpenAI chat body, which parse_chat_request then validates like any other — one request model,
// one chat path (template, tool parser, grammar), several encodings. Every refusal is a 400 naming the field.
// Must not know: the engine, the tokenizer or HTTP.
#pragma once
#include <nlohmann/json.hpp>

namespace slimkv {

// system (a string or text blocks) -> a system message; messages' content blocks: text, tool_use (assistant ->
// tool_calls), tool_result (user -> a tool message before the user's text), thinking (assistant ->
// reasoning_content); tools (input_schema -> parameters), tool_choice (auto / any / tool / none,
// disable_parallel_tool_use), stop_sequences -> stop, max_tokens (required), temperature, top_p, top_k, stream
// (usage always streamed), thinking (enabled / disabled -> the template's enable_thinking), metadata (ignored).
nlohmann::ordered_json messages_to_chat_body(const nlohmann::ordered_json& body);

}  // namespace slimkv
