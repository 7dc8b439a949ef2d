#include "server/output_constraint.h"

#include <cmath>

#include <fmt/format.h>

#include "grammar/choice_compiler.h"
#include "grammar/grammar_error.h"
#include "grammar/json_schema_compiler.h"
#include "grammar/matcher.h"
#include "grammar/regex_compiler.h"
#include "grammar/token_vocabulary.h"
#include "server/api_error.h"
#include "tokenizer/tokenizer.h"

namespace slimkv {
namespace {

// A grammar error at run time (the matcher's parse-count bounds) must not escape onto the engine thread: the
// constraint then allows only the end of the output, so the choice stops with what it has.
class GrammarConstraint : public TokenConstraint {
 public:
  GrammarConstraint(std::shared_ptr<const grammar::Grammar> g, std::shared_ptr<const grammar::TokenVocabulary> v)
      : vocab_(v), matcher_(std::move(g), std::move(v)) {}
  bool accepts(int32_t token) const override {
    if (broken_) return vocab_->is_eos(token);
    try {
      return matcher_.accepts(token);
    } catch (const grammar::GrammarError&) {
      broken_ = true;
      return vocab_->is_eos(token);
    }
  }
  void mask(float* logits, int32_t vocab_size) const override {
    try {
      if (!broken_) matcher_.fill_mask(allowed_);
    } catch (const grammar::GrammarError&) {
      broken_ = true;
    }
    if (broken_) {
      allowed_.assign(vocab_->size(), 0);
      for (int32_t id : vocab_->eos_ids()) allowed_[static_cast<size_t>(id)] = 1;
    }
    const auto n = std::min<size_t>(allowed_.size(), static_cast<size_t>(vocab_size));
    for (size_t i = 0; i < n; ++i) {
      if (!allowed_[i]) logits[i] = -INFINITY;
    }
    for (size_t i = n; i < static_cast<size_t>(vocab_size); ++i) logits[i] = -INFINITY;  // rows past the vocabulary
  }
  void advance(int32_t token) override {
    if (broken_) return;
    try {
      if (!matcher_.advance(token)) broken_ = true;  // refused (cannot happen after accepts / mask): end here
    } catch (const grammar::GrammarError&) {
      broken_ = true;
    }
  }

 private:
  std::shared_ptr<const grammar::TokenVocabulary> vocab_;
  grammar::Matcher matcher_;
  mutable bool broken_ = false;
  mutable std::vector<uint8_t> allowed_;  // [vocab] scratch
};

// A tool's parameters as a grammar can hold them: numeric bounds (minimum, maximum, exclusive*, multipleOf) are
// not enforced by grammar/, so they are dropped for forced tool calls (the arguments keep their types) rather than
// refusing every tool that carries one.
nlohmann::ordered_json without_numeric_bounds(nlohmann::ordered_json s) {
  if (s.is_array()) {
    for (auto& v : s) v = without_numeric_bounds(std::move(v));
    return s;
  }
  if (!s.is_object()) return s;
  for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}) s.erase(k);
  for (auto& [key, v] : s.items()) {
    const bool named_map = key == "properties" || key == "$defs" || key == "definitions";
    if (named_map && v.is_object()) {  // a map of names to schemas: its keys are names, not keywords
      for (auto& [name, sub] : v.items()) sub = without_numeric_bounds(std::move(sub));
    } else if (v.is_object() || v.is_array()) {
      v = without_numeric_bounds(std::move(v));
    }
  }
  return s;
}

}  // namespace

OutputConstraints::OutputConstraints(const Tokenizer& tok, std::vector<int32_t> eos_ids)
    : tok_(tok), eos_ids_(std::move(eos_ids)) {}

OutputConstraints::~OutputConstraints() = default;

std::shared_ptr<const grammar::TokenVocabulary> OutputConstraints::vocabulary() const {
  std::call_once(once_, [&] {
    const int32_t n = tok_.vocab_size();
    std::vector<std::string> bytes(static_cast<size_t>(n));
    // A token's bytes in running text: decoded after itself, so that no "first piece" rule (a stripped leading
    // space) applies; control tokens decode to nothing and are never allowed (EOS ids aside).
    for (int32_t id = 0; id < n; ++id) bytes[static_cast<size_t>(id)] = tok_.decode_token(id, id);
    vocab_ = std::make_shared<const grammar::TokenVocabulary>(std::move(bytes), eos_ids_);
  });
  return vocab_;
}

TokenConstraintFactory OutputConstraints::for_grammar(std::shared_ptr<const grammar::Grammar> g) const {
  auto v = vocabulary();
  return [g = std::move(g), v] { return std::make_unique<GrammarConstraint>(g, v); };
}

TokenConstraintFactory OutputConstraints::for_tool_choice(const ToolRequest& tools) const {
  using Choice = ToolRequest::Choice;
  using ojson = nlohmann::ordered_json;
  if (tools.choice != Choice::kRequired && tools.choice != Choice::kNamed) return {};
  ojson schema;
  if (tools.choice == Choice::kNamed) {
    schema = *tool_parameters(tools, tools.named);
  } else {
    ojson any = ojson::array();
    for (const ojson& t : tools.tools) {  // each tool's own parameters (a look-up by name per tool: n^2)
      const ojson& fn = t["function"];
      const std::string name = fn["name"];
      const auto p = fn.find("parameters");
      const ojson params = p == fn.end() || p->is_null() ? ojson::object() : *p;
      any.push_back({{"type", "object"},
                     {"properties", {{"name", {{"const", name}}}, {"parameters", params}}},
                     {"required", {"name", "parameters"}}});
    }
    schema = {{"type", "array"}, {"minItems", 1}, {"items", {{"anyOf", any}}}};
    if (!tools.parallel) schema["maxItems"] = 1;
  }
  if (schema.empty()) schema = {{"type", "object"}};  // a function without parameters: any object
  try {
    return for_grammar(grammar::compile_json_schema(without_numeric_bounds(schema)));
  } catch (const grammar::GrammarError& e) {
    throw invalid_request(fmt::format("'tools': a function's parameters cannot be enforced: {}", e.what()), "tools");
  }
}

TokenConstraintFactory OutputConstraints::for_output(const StructuredOutput& out) const {
  using Kind = StructuredOutput::Kind;
  if (out.kind == Kind::kNone) return {};
  std::shared_ptr<const grammar::Grammar> g;
  try {
    switch (out.kind) {
      case Kind::kJsonObject: g = grammar::compile_any_json(); break;
      case Kind::kJsonSchema: g = grammar::compile_json_schema(out.schema); break;
      case Kind::kRegex: g = grammar::compile_regex(out.regex); break;
      case Kind::kChoice: g = grammar::compile_choice(out.choices); break;
      case Kind::kNone: break;
    }
  } catch (const grammar::GrammarError& e) {
    throw invalid_request(fmt::format("'{}': {}", out.field, e.what()), out.field);
  }
  return for_grammar(std::move(g));
}

}  // namespace slimkv
