// The engine's settings: the sandbox bounds (each a TemplateError of kind Limit when reached, never a crash or a
// hang), the lexer's whitespace options and the clock strftime_now reads (injectable so tests are reproducible).
// Must not know: templates or values.
#pragma once
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>

namespace slimkv::jinja {

struct Limits {
  size_t max_output_bytes = size_t{16} << 20;  // the rendered text, and any one string built while rendering
  int64_t max_loop_iterations = 1'000'000;     // for-loop iterations, all loops of one render together
  int max_call_depth = 100;                    // nested macro calls (recursion)
  int max_eval_depth = 2000;                   // nested statement / expression evaluation (C++ stack use)
  int max_nesting = 128;                       // nested expressions and blocks in the source (parser)
  int64_t max_work = 50'000'000;               // evaluation steps plus bytes / elements copied, per render
};

struct Options {
  Limits limits;
  bool trim_blocks = true;    // transformers' apply_chat_template sets both
  bool lstrip_blocks = true;
  // strftime_now's clock (local time); empty: the system clock.
  std::function<std::tm()> now;
};

}  // namespace slimkv::jinja
