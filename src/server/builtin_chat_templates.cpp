#include "server/builtin_chat_templates.h"

#include <string>

namespace slimkv {
namespace {

// Each on one line of Jinja (trim_blocks / lstrip_blocks would otherwise shape the whitespace).
constexpr std::string_view kChatML =
    "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

constexpr std::string_view kLlama3 =
    "{% for m in messages %}{{ '<|start_header_id|>' + m.role + '<|end_header_id|>\\n\\n' + (m.content | trim) + "
    "'<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

// System and developer fold into user turns.
constexpr std::string_view kGemma =
    "{% for m in messages %}{{ '<start_of_turn>' + ('model' if m.role == 'assistant' else 'user') + '\\n' + "
    "(m.content | trim) + '<end_of_turn>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}";

constexpr std::string_view kPhi3 =
    "{% for m in messages %}{{ '<|' + m.role + '|>\\n' + m.content + '<|end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}";

// A leading system message goes into the first user turn; [/INST] opens the reply (no generation prompt).
constexpr std::string_view kSystemSplit =
    "{% if messages[0].role in ['system', 'developer'] %}{% set sys = messages[0].content %}"
    "{% set rest = messages[1:] %}{% else %}{% set sys = '' %}{% set rest = messages %}{% endif %}";

constexpr std::string_view kLlama2Body =
    "{% set ns = namespace(first_user=true, started=false) %}{% for m in rest %}"
    "{% if m.role == 'assistant' %}{{ ' ' + (m.content | trim) + ' </s>' }}"
    "{% else %}{% set c = m.content | trim %}"
    "{% if ns.first_user and sys %}{% set c = '<<SYS>>\\n' + sys + '\\n<</SYS>>\\n\\n' + c %}{% endif %}"
    "{% set ns.first_user = false %}{{ ('<s>' if ns.started else '') + '[INST] ' + c + ' [/INST]' }}{% endif %}"
    "{% set ns.started = true %}{% endfor %}";

// As Mistral's template: the system message goes before the last user message.
constexpr std::string_view kMistralBody =
    "{% for m in rest %}{% if m.role == 'assistant' %}{{ m.content + '</s>' }}"
    "{% else %}{{ '[INST]' + ((sys + '\\n\\n') if (loop.last and sys) else '') + m.content + '[/INST]' }}{% endif %}"
    "{% endfor %}";

std::string_view with_system_split(std::string_view body) {
  static const std::string llama2 = std::string(kSystemSplit) + std::string(kLlama2Body);
  static const std::string mistral = std::string(kSystemSplit) + std::string(kMistralBody);
  return body == kLlama2Body ? llama2 : mistral;
}

}  // namespace

std::optional<std::string_view> builtin_chat_template(std::string_view name) {
  if (name == "chatml" || name == "qwen") return kChatML;
  if (name == "llama3") return kLlama3;
  if (name == "gemma") return kGemma;
  if (name == "phi3") return kPhi3;
  if (name == "llama2") return with_system_split(kLlama2Body);
  if (name == "mistral") return with_system_split(kMistralBody);
  return std::nullopt;
}

const char* builtin_chat_template_names() { return "chatml, qwen, llama2, llama3, gemma, phi3, mistral"; }

}  // namespace slimkv
