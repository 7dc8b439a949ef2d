// The Jinja engine's public API: parse a Hugging Face chat template once, render it many times with a context of
// variables (messages, tools, add_generation_prompt, bos_token, ...), the way transformers' apply_chat_template does
// (jinja2's ImmutableSandboxedEnvironment, trim_blocks + lstrip_blocks, loopcontrols, {% generation %}, tojson,
// raise_exception, strftime_now). Errors are TemplateError (template_error.h); what is supported: docs/jinja.md.
// Must not know: chat requests, tokenizers or the server.
//
//   auto t = slimkv::jinja::Template::parse(source);             // throws TemplateError (Syntax)
//   std::string prompt = t.render(nlohmann::ordered_json{{"messages", msgs}, {"add_generation_prompt", true}});
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "jinja/options.h"
#include "jinja/template_error.h"
#include "jinja/value.h"

namespace slimkv::jinja {

struct Stmt;

class Template {
 public:
  static Template parse(std::string_view source, Options options = {});
  // A parsed template is immutable: it may be rendered by several threads at once (each render has its own state).

  // `context` must be a JSON object: each key is a variable. ordered_json keeps dict key order (tojson prints keys in
  // the order given, as Python does); with plain nlohmann::json the keys come sorted. Throws TemplateError.
  std::string render(const nlohmann::ordered_json& context) const;
  std::string render(const nlohmann::json& context) const;
  std::string render(const std::vector<std::pair<std::string, Value>>& variables) const;

 private:
  struct Parsed;
  std::shared_ptr<const Parsed> parsed_;
  Options options_;
};

}  // namespace slimkv::jinja
