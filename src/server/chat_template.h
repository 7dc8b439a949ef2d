// The server's chat prompt renderer, chosen and parsed once at start-up: a Jinja chat template (the model's own,
// --chat-template FILE, or a built-in name's source) rendered by the Jinja engine the way transformers'
// apply_chat_template does, DeepSeek-V4's built-in renderer, or the plain default for models without a template.
// Must not know: HTTP (a render's errors are jinja::TemplateError; the session answers them with 400) or tokenizers.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/openai_request.h"

namespace slimkv {

namespace jinja {
class Template;
}

// A template's bos_token / eos_token (the tokenizer's special tokens' text). When the tokenizer adds BOS itself at
// encoding, a rendered prompt's leading bos_token text is dropped: the prompt gets one BOS, the id.
struct ChatSpecialTokens {
  std::string bos, eos;
  bool tokenizer_adds_bos = false;
};

class ChatTemplate {
 public:
  enum class Kind { Plain, Jinja, DeepSeekV4 };

  ChatTemplate() = default;  // plain
  static ChatTemplate plain() { return {}; }
  // DeepSeek-V4 ships a Python encoder (encoding_dsv4.py), not a Jinja template: chat mode (no thinking), tool
  // results merged into the user turn as <tool_result> blocks.
  static ChatTemplate deepseek_v4();
  // Parses `source` once; a syntax error throws Error naming `name` and the line.
  static ChatTemplate from_jinja(std::string name, std::string_view source);
  // --chat-template NAME|FILE: plain, deepseek-v4, a built-in name (builtin_chat_templates.h), or a Jinja file (a
  // template file, a tokenizer_config.json or a model folder). Throws Error.
  static ChatTemplate resolve(const std::string& name_or_file);

  void set_special_tokens(ChatSpecialTokens t) { tokens_ = std::move(t); }
  Kind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  // The prompt text for `messages`, ending where the assistant's reply starts (add_generation_prompt false: without
  // the assistant's opening, for formats that have one). Jinja: throws jinja::TemplateError (Raised = the
  // template's own rule about its input, e.g. Gemma's role alternation).
  // `tools` (null: none) and `kwargs` (chat_template_kwargs, e.g. enable_thinking) reach a Jinja template as
  // transformers passes them; the plain and DeepSeek-V4 renderers ignore them.
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true,
                     const nlohmann::ordered_json& tools = nullptr,
                     const nlohmann::ordered_json& kwargs = nlohmann::ordered_json::object()) const;
  const std::string& source() const { return source_; }  // the Jinja text ("" for the plain / DeepSeek-V4 renderers)

 private:
  Kind kind_ = Kind::Plain;
  std::string name_ = "plain";
  std::shared_ptr<const jinja::Template> template_;
  std::string source_;
  ChatSpecialTokens tokens_;
};

}  // namespace slimkv
