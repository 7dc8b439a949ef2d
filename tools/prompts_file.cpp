#include "tools/prompts_file.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"

namespace slimkv {

std::vector<PromptSpec> read_prompts_file(const std::string& path, int32_t default_max_tokens) {
  std::ifstream in(path);
  SLIMKV_CHECK(in.good(), "cannot open prompts file '{}'", path);
  std::vector<PromptSpec> out;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    if (line[0] == '{') {
      auto j = nlohmann::json::parse(line, nullptr, false);
      SLIMKV_CHECK(j.is_object() && j.contains("prompt") && j["prompt"].is_string(),
                   "{}:{}: a JSON line needs a string \"prompt\"", path, n);
      int32_t mt = default_max_tokens;
      if (j.contains("max_tokens")) {
        SLIMKV_CHECK(j["max_tokens"].is_number_integer() && j["max_tokens"].get<int64_t>() >= 1 &&
                         j["max_tokens"].get<int64_t>() <= (1 << 24),
                     "{}:{}: max_tokens must be a positive integer", path, n);
        mt = j["max_tokens"].get<int32_t>();
      }
      out.push_back({j["prompt"].get<std::string>(), mt});
    } else {
      out.push_back({line, default_max_tokens});
    }
  }
  SLIMKV_CHECK(!out.empty(), "prompts file '{}' has no prompts", path);
  return out;
}

}  // namespace slimkv
