// Fuzz target: arbitrary template text through the Jinja engine (lexer, parser, name check, evaluator) rendered
// against a fixed chat context. Only TemplateError may come out; the sandbox's bounds (set small here) must stop
// every loop, recursion and allocation the input can ask for.
#include <cstdint>
#include <string_view>

#include "jinja/template.h"

namespace {

const nlohmann::ordered_json& fuzz_context() {
  static const nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hi <b>"}, {"type": "image"}]},
      {"role": "assistant", "content": "", "reasoning_content": "think",
       "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 1.5, "y": [true, null]}}}]},
      {"role": "tool", "content": "{\"ok\": 1}"},
      {"role": "user", "content": "caf\u00e9 \ud83d\ude00"}],
    "tools": [{"type": "function", "function": {"name": "f", "description": "d",
      "parameters": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "array",
      "items": {"type": "string"}}}, "required": ["x"]}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": false,
    "documents": null, "n": 3, "f": 0.25})");
  return ctx;
}

std::tm fuzz_clock() {
  std::tm tm{};
  tm.tm_year = 126;
  tm.tm_mday = 1;
  return tm;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  slimkv::jinja::Options opt;
  opt.now = fuzz_clock;
  opt.limits.max_output_bytes = size_t{1} << 20;
  opt.limits.max_loop_iterations = 100000;
  opt.limits.max_call_depth = 40;
  opt.limits.max_eval_depth = 400;  // ASan's frames are large
  opt.limits.max_work = 2'000'000;
  try {
    auto t = slimkv::jinja::Template::parse(text, opt);
    t.render(fuzz_context());
  } catch (const slimkv::jinja::TemplateError&) {
  }
  return 0;
}
