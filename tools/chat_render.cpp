// `slimkv chat-render`: renders a Hugging Face chat template (src/jinja/) with messages from a JSON file, the way
// transformers' apply_chat_template does, and prints the prompt text exactly (no newline added).
// -m is a tokenizer_config.json, a .jinja file, or a folder holding chat_template.jinja or tokenizer_config.json.
#include <cstdio>

#include "core/mapped_file.h"
#include "jinja/chat_context.h"
#include "tools/commands.h"

namespace slimkv {
namespace {

using ojson = nlohmann::ordered_json;

struct ChatRenderFlags {
  std::string model, messages, tools, template_kwargs;
  bool add_generation_prompt = false;
};

ojson read_json_file(const std::string& path, const char* what) {
  ojson j = ojson::parse(read_text_file(path), nullptr, /*allow_exceptions=*/false);
  SLIMKV_CHECK(!j.is_discarded(), "{} {}: not valid JSON", what, path);
  return j;
}

int run_chat_render(const ChatRenderFlags& f) {
  const jinja::ChatTemplateFile file = jinja::find_chat_template(f.model);
  jinja::ChatInput in;
  in.messages = read_json_file(f.messages, "--messages");
  SLIMKV_CHECK(in.messages.is_array(), "--messages {}: expected a JSON array of messages", f.messages);
  in.tools = f.tools.empty() ? ojson() : read_json_file(f.tools, "--tools");
  in.add_generation_prompt = f.add_generation_prompt;
  in.special_tokens = jinja::special_tokens_of(file.config);
  if (!f.template_kwargs.empty()) {
    in.kwargs = ojson::parse(f.template_kwargs, nullptr, false);
    SLIMKV_CHECK(in.kwargs.is_object(), "--template-kwargs: expected a JSON object");
  }
  try {
    std::string text = jinja::render_chat(jinja::Template::parse(file.source), in);
    std::fwrite(text.data(), 1, text.size(), stdout);
  } catch (const jinja::TemplateError& e) {
    fail("chat template ({}): {}", jinja::error_kind_name(e.kind()), e.what());
  }
  return 0;
}

}  // namespace

void add_chat_render_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<ChatRenderFlags>();
  auto* sub = app.add_subcommand("chat-render", "Render a Hugging Face chat template with messages (as transformers)");
  sub->add_option("-m,--model", f->model, "tokenizer_config.json, a .jinja file, or a model folder")->required();
  sub->add_option("--messages", f->messages, "JSON file: the messages array")->required();
  sub->add_option("--tools", f->tools, "JSON file: the tools array (default: none)");
  sub->add_flag("--add-generation-prompt", f->add_generation_prompt, "End with the assistant's opening");
  sub->add_option("--template-kwargs", f->template_kwargs, "JSON object of extra variables (e.g. {\"enable_thinking\": false})");
  out.push_back({sub, [f] { return run_chat_render(*f); }});
}

}  // namespace slimkv
