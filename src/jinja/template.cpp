#include "jinja/template.h"

#include "jinja/builtins.h"
#include "jinja/evaluator.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"
#include "jinja/static_check.h"

namespace slimkv::jinja {

const char* error_kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::Syntax: return "TemplateSyntaxError";
    case ErrorKind::Undefined: return "UndefinedError";
    case ErrorKind::Type: return "TypeError";
    case ErrorKind::Security: return "SecurityError";
    case ErrorKind::Limit: return "LimitError";
    case ErrorKind::Raised: return "TemplateError";
  }
  return "TemplateError";
}

struct Template::Parsed {
  Body body;
};

Template Template::parse(std::string_view source, Options options) {
  Template t;
  auto parsed = std::make_shared<Parsed>();
  LexerOptions lex{options.trim_blocks, options.lstrip_blocks};
  parsed->body = parse_template(tokenize(source, lex), ParseLimits{options.limits.max_nesting});
  check_filter_and_test_names(parsed->body);
  t.parsed_ = std::move(parsed);
  t.options_ = std::move(options);
  return t;
}

std::string Template::render(const std::vector<std::pair<std::string, Value>>& variables) const {
  auto globals = std::make_shared<Scope>();
  add_globals(*globals);
  auto context = std::make_shared<Scope>(globals);
  for (const auto& [k, v] : variables) context->set(k, v);
  Evaluator ev(options_);
  return ev.render(parsed_->body, context);
}

namespace {
template <typename Json>
std::vector<std::pair<std::string, Value>> variables_from(const Json& context) {
  if (!context.is_object()) raise(ErrorKind::Type, "the render context must be a JSON object");
  std::vector<std::pair<std::string, Value>> vars;
  for (auto it = context.begin(); it != context.end(); ++it) vars.emplace_back(it.key(), Value::from_json(it.value()));
  return vars;
}
}  // namespace

std::string Template::render(const nlohmann::ordered_json& context) const { return render(variables_from(context)); }
std::string Template::render(const nlohmann::json& context) const { return render(variables_from(context)); }

}  // namespace slimkv::jinja
