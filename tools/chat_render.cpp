// `slimkv chat-render`: renders a Hugging Face chat template (src/jinja/) with messages from a JSON file, the way
// transformers' apply_chat_template does, and prints the prompt text exactly (no newline added).
// -m is a tokenizer_config.json, a .jinja file, or a folder holding chat_template.jinja or tokenizer_config.json.
#include <cstdio>
#include <filesystem>

#include "core/mapped_file.h"
#include "jinja/template.h"
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

// The template source and the tokenizer config beside it (empty when there is none).
std::pair<std::string, ojson> find_template(const std::string& path) {
  namespace fs = std::filesystem;
  ojson cfg = ojson::object();
  fs::path dir = fs::is_directory(path) ? fs::path(path) : fs::path(path).parent_path();
  fs::path cfg_path = fs::is_directory(path) ? dir / "tokenizer_config.json" : fs::path(path);
  if (cfg_path.extension() == ".json" && fs::exists(cfg_path)) cfg = read_json_file(cfg_path.string(), "-m");
  if (!fs::is_directory(path) && fs::path(path).extension() != ".json") return {read_text_file(path), cfg};
  if (fs::exists(dir / "chat_template.jinja")) return {read_text_file((dir / "chat_template.jinja").string()), cfg};
  SLIMKV_CHECK(cfg.contains("chat_template"), "-m {}: no chat_template.jinja and no chat_template in the config", path);
  const ojson& ct = cfg["chat_template"];
  if (ct.is_string()) return {ct.get<std::string>(), cfg};
  SLIMKV_CHECK(ct.is_array(), "-m {}: chat_template is neither a string nor a list of named templates", path);
  for (const auto& t : ct) {  // named templates: "default", as transformers picks without tools
    if (t.value("name", "") == "default") return {t.value("template", ""), cfg};
  }
  fail("-m {}: no template named 'default' among the config's chat templates", path);
}

// transformers' special_tokens_map: the config's special tokens as strings (AddedToken dicts reduced to content).
void add_special_tokens(const ojson& cfg, ojson& ctx) {
  auto as_text = [](const ojson& v) -> ojson { return v.is_object() ? v.value("content", ojson()) : v; };
  for (const char* k : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
    if (cfg.contains(k) && !as_text(cfg[k]).is_null()) ctx[k] = as_text(cfg[k]);
  }
  if (cfg.contains("additional_special_tokens") && cfg["additional_special_tokens"].is_array()) {
    ojson extra = ojson::array();
    for (const auto& x : cfg["additional_special_tokens"]) extra.push_back(as_text(x));
    if (!extra.empty()) ctx["additional_special_tokens"] = extra;
  }
}

int run_chat_render(const ChatRenderFlags& f) {
  auto [source, cfg] = find_template(f.model);
  ojson ctx = ojson::object();
  ctx["messages"] = read_json_file(f.messages, "--messages");
  SLIMKV_CHECK(ctx["messages"].is_array(), "--messages {}: expected a JSON array of messages", f.messages);
  ctx["tools"] = f.tools.empty() ? ojson() : read_json_file(f.tools, "--tools");
  ctx["documents"] = ojson();
  ctx["add_generation_prompt"] = f.add_generation_prompt;
  add_special_tokens(cfg, ctx);
  if (!f.template_kwargs.empty()) {
    ojson kw = ojson::parse(f.template_kwargs, nullptr, false);
    SLIMKV_CHECK(kw.is_object(), "--template-kwargs: expected a JSON object");
    for (auto it = kw.begin(); it != kw.end(); ++it) ctx[it.key()] = it.value();
  }
  try {
    std::string text = jinja::Template::parse(source).render(ctx);
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
