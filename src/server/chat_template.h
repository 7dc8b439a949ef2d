// Chat templates: the well-known formats recognised by their markers (ChatML/Qwen, Llama-2, Llama-3, Gemma,
// Phi-3, Mistral) and rendered by hand, plus a plain documented default for base models. Not a Jinja engine.
// Must not know: the tokenizer (BOS is added at encoding; special markers are rendered as text).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "server/openai_request.h"

namespace slimkv {

// DeepSeekV4: a built-in renderer (DeepSeek-V4 ships a Python encoder, encoding_dsv4.py, not a Jinja template): chat
// mode (no thinking), tool results merged into the user turn as <tool_result> blocks.
enum class ChatTemplate { Plain, ChatML, Llama2, Llama3, Gemma, Phi3, Mistral, DeepSeekV4 };

const char* chat_template_name(ChatTemplate t);
// A Jinja source (e.g. GGUF tokenizer.chat_template) -> the format it implements; Plain when not recognised.
ChatTemplate detect_chat_template(std::string_view jinja);
// --chat-template: a name (plain, chatml, qwen, llama2, llama3, gemma, phi3, mistral, deepseek-v4) or a file holding a Jinja
// template that detect_chat_template recognises. Throws Error otherwise.
ChatTemplate resolve_chat_template(const std::string& name_or_file);
// The prompt text for `messages`, ending where the assistant's reply starts (add_generation_prompt false: without the
// assistant's opening, for formats that have one).
std::string render_chat(ChatTemplate t, const std::vector<ChatMessage>& messages, bool add_generation_prompt = true);

}  // namespace slimkv
