#include "jinja/chat_context.h"

#include <filesystem>

#include "core/mapped_file.h"

namespace slimkv::jinja {
namespace {

using ojson = nlohmann::ordered_json;

ojson read_json_file(const std::string& path) {
  ojson j = ojson::parse(read_text_file(path), nullptr, /*allow_exceptions=*/false);
  SLIMKV_CHECK(!j.is_discarded(), "{}: not valid JSON", path);
  return j;
}

}  // namespace

ChatTemplateFile find_chat_template(const std::string& path) {
  namespace fs = std::filesystem;
  ChatTemplateFile out;
  const bool is_dir = fs::is_directory(path);
  const fs::path dir = is_dir ? fs::path(path) : fs::path(path).parent_path();
  const fs::path cfg_path = is_dir ? dir / "tokenizer_config.json" : fs::path(path);
  if (cfg_path.extension() == ".json" && fs::exists(cfg_path)) out.config = read_json_file(cfg_path.string());
  if (!is_dir && fs::path(path).extension() != ".json") {
    out.source = read_text_file(path);
    return out;
  }
  if (fs::exists(dir / "chat_template.jinja")) {
    out.source = read_text_file((dir / "chat_template.jinja").string());
    return out;
  }
  SLIMKV_CHECK(out.config.is_object() && out.config.contains("chat_template"),
               "{}: no chat_template.jinja and no chat_template in the config", path);
  const ojson& ct = out.config["chat_template"];
  if (ct.is_string()) {
    out.source = ct.get<std::string>();
    return out;
  }
  SLIMKV_CHECK(ct.is_array(), "{}: chat_template is neither a string nor a list of named templates", path);
  for (const auto& t : ct) {
    if (t.is_object() && t.value("name", "") == "default") {
      out.source = t.value("template", "");
      return out;
    }
  }
  fail("{}: no template named 'default' among the config's chat templates", path);
}

ojson special_tokens_of(const ojson& cfg) {
  ojson out = ojson::object();
  if (!cfg.is_object()) return out;
  auto as_text = [](const ojson& v) -> ojson { return v.is_object() ? v.value("content", ojson()) : v; };
  for (const char* k : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
    if (cfg.contains(k) && !as_text(cfg[k]).is_null()) out[k] = as_text(cfg[k]);
  }
  if (cfg.contains("additional_special_tokens") && cfg["additional_special_tokens"].is_array()) {
    ojson extra = ojson::array();
    for (const auto& x : cfg["additional_special_tokens"]) extra.push_back(as_text(x));
    if (!extra.empty()) out["additional_special_tokens"] = extra;
  }
  return out;
}

ojson chat_context(const ChatInput& in) {
  ojson ctx = ojson::object();
  ctx["messages"] = in.messages;
  ctx["tools"] = in.tools;
  ctx["documents"] = ojson();
  ctx["add_generation_prompt"] = in.add_generation_prompt;
  for (auto it = in.special_tokens.begin(); it != in.special_tokens.end(); ++it) ctx[it.key()] = it.value();
  for (auto it = in.kwargs.begin(); it != in.kwargs.end(); ++it) ctx[it.key()] = it.value();
  return ctx;
}

std::string render_chat(const Template& t, const ChatInput& in) { return t.render(chat_context(in)); }

}  // namespace slimkv::jinja
