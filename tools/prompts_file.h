// Reads a prompts file: one prompt per line, or JSON lines {"prompt": ..., "max_tokens": ...}.
// Must not know: tokenizers or the engine.
#pragma once
#include <string>
#include <vector>

namespace slimkv {

struct PromptSpec {
  std::string text;
  int32_t max_tokens;
};

std::vector<PromptSpec> read_prompts_file(const std::string& path, int32_t default_max_tokens);

}  // namespace slimkv
