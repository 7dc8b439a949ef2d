// The agent fields of a chat request, validated into plain data: `tools` (OpenAI function tools, kept as the JSON the
// chat template renders), `tool_choice` (none / auto / required / one named function), `parallel_tool_calls`, and
// `chat_template_kwargs`. Must not know: templates, tokenizers or how a model's tool calls are parsed back.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace slimkv {

struct ToolRequest {
  nlohmann::ordered_json tools;          // null: none; else [{"type": "function", "function": {...}}] as sent
  enum class Choice { kNone, kAuto, kRequired, kNamed } choice = Choice::kAuto;
  std::string named;                     // kNamed: the function's name (one of the tools)
  bool parallel = true;                  // parallel_tool_calls
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs
  bool has_tools() const { return tools.is_array() && !tools.empty(); }
};

// Throws ApiError (400) naming the field. Without tools, tool_choice may only be "none" or "auto".
ToolRequest parse_tool_request(const nlohmann::ordered_json& body);
// A function tool's JSON schema for its arguments ({} when it has none); nullptr when `name` is not a tool.
const nlohmann::ordered_json* tool_parameters(const ToolRequest& r, const std::string& name);

}  // namespace slimkv
