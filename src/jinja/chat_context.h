// transformers' apply_chat_template around a Template: where a model's template lives (a .jinja file, a folder, a
// tokenizer_config.json), the special-token variables a config gives, and the context one render gets.
// Shared by `slimkv chat-render` and the server. Must not know: HTTP, chat requests or tokenizers.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "jinja/template.h"

namespace slimkv::jinja {

struct ChatTemplateFile {
  std::string source;                                          // the Jinja text
  nlohmann::ordered_json config = nlohmann::ordered_json::object();  // the tokenizer_config.json beside it, or {}
};

// `path`: a tokenizer_config.json, a .jinja (or any text) file, or a folder holding chat_template.jinja or
// tokenizer_config.json. A config's named templates give "default" (as transformers picks without tools). Throws Error.
ChatTemplateFile find_chat_template(const std::string& path);

// transformers' special_tokens_map: the config's special tokens as strings (AddedToken dicts reduced to content):
// {"bos_token": ..., "eos_token": ..., "additional_special_tokens": [...]}, only those the config has.
nlohmann::ordered_json special_tokens_of(const nlohmann::ordered_json& config);

struct ChatInput {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;                                     // null: none
  bool add_generation_prompt = false;
  nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object();  // bos_token, eos_token, ...
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();          // template kwargs (enable_thinking, ...)
};

// The variables apply_chat_template passes: messages, tools, documents (None), add_generation_prompt, the special
// tokens, then the kwargs (which win).
nlohmann::ordered_json chat_context(const ChatInput& in);

// t.render(chat_context(in)); throws TemplateError (Raised: the template's own rule, e.g. role alternation).
std::string render_chat(const Template& t, const ChatInput& in);

}  // namespace slimkv::jinja
