// The Jinja sources behind --chat-template's names (chatml/qwen, llama2, llama3, gemma, phi3, mistral): small
// templates in the shape of those families' own, rendered by the Jinja engine like any model's template.
// Must not know: the engine, the server or tokenizers (BOS is the tokenizer's: none of these writes bos_token).
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace slimkv {

// The source for a built-in name, or nullopt. "plain" and "deepseek-v4" are not Jinja (chat_template.h).
std::optional<std::string_view> builtin_chat_template(std::string_view name);
// "chatml, qwen, llama2, llama3, gemma, phi3, mistral" (for messages).
const char* builtin_chat_template_names();

}  // namespace slimkv
