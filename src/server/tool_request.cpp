#include "server/tool_request.h"

#include <fmt/format.h>

#include <unordered_set>

#include "server/api_error.h"

namespace slimkv {
namespace {

using ojson = nlohmann::ordered_json;

const ojson* tool_field(const ojson& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

void check_tools(const ojson& tools) {
  if (!tools.is_array()) throw invalid_request("'tools' must be an array of function tools", "tools");
  std::unordered_set<std::string> names;
  for (const ojson& t : tools) {
    const ojson* type = t.is_object() ? tool_field(t, "type") : nullptr;
    const ojson* fn = t.is_object() ? tool_field(t, "function") : nullptr;
    if (!type || *type != "function" || !fn || !fn->is_object()) {
      throw invalid_request("each tool must be {\"type\": \"function\", \"function\": {...}}", "tools");
    }
    const ojson* name = tool_field(*fn, "name");
    if (!name || !name->is_string() || name->get<std::string>().empty()) {
      throw invalid_request("each tool's function needs a non-empty string 'name'", "tools");
    }
    if (!names.insert(name->get<std::string>()).second) {
      throw invalid_request(fmt::format("two tools are named '{}'", name->get<std::string>()), "tools");
    }
    const ojson* params = tool_field(*fn, "parameters");
    if (params && !params->is_object()) {
      throw invalid_request(fmt::format("tool '{}': 'parameters' must be a JSON schema object", name->get<std::string>()),
                            "tools");
    }
  }
}

}  // namespace

const ojson* tool_parameters(const ToolRequest& r, const std::string& name) {
  static const ojson kEmpty = ojson::object();
  if (!r.has_tools()) return nullptr;
  for (const ojson& t : r.tools) {
    const ojson& fn = t["function"];
    if (fn["name"] != name) continue;
    const ojson* p = tool_field(fn, "parameters");
    return p ? p : &kEmpty;
  }
  return nullptr;
}

ToolRequest parse_tool_request(const ojson& body) {
  ToolRequest r;
  if (const ojson* t = tool_field(body, "tools")) {
    check_tools(*t);
    if (!t->empty()) r.tools = *t;
  }
  if (const ojson* p = tool_field(body, "parallel_tool_calls")) {
    if (!p->is_boolean()) throw invalid_request("'parallel_tool_calls' must be a boolean", "parallel_tool_calls");
    r.parallel = p->get<bool>();
  }
  if (const ojson* k = tool_field(body, "chat_template_kwargs")) {
    if (!k->is_object()) throw invalid_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    r.template_kwargs = *k;
  }
  r.choice = r.has_tools() ? ToolRequest::Choice::kAuto : ToolRequest::Choice::kNone;
  const ojson* c = tool_field(body, "tool_choice");
  if (!c) return r;
  if (c->is_string()) {
    const std::string s = c->get<std::string>();
    if (s == "none") r.choice = ToolRequest::Choice::kNone;
    else if (s == "auto") r.choice = r.has_tools() ? ToolRequest::Choice::kAuto : ToolRequest::Choice::kNone;
    else if (s == "required") r.choice = ToolRequest::Choice::kRequired;
    else throw invalid_request(fmt::format("'tool_choice' must be none, auto, required or a function (got '{}')", s),
                               "tool_choice");
  } else if (c->is_object()) {
    const ojson* fn = tool_field(*c, "function");
    const ojson* name = fn && fn->is_object() ? tool_field(*fn, "name") : nullptr;
    if (!name || !name->is_string()) {
      throw invalid_request("'tool_choice' object must be {\"type\": \"function\", \"function\": {\"name\": ...}}",
                            "tool_choice");
    }
    r.choice = ToolRequest::Choice::kNamed;
    r.named = name->get<std::string>();
    if (!tool_parameters(r, r.named)) {
      throw invalid_request(fmt::format("'tool_choice' names '{}', which is not one of the tools", r.named),
                            "tool_choice");
    }
  } else {
    throw invalid_request("'tool_choice' must be a string or an object", "tool_choice");
  }
  if (r.choice == ToolRequest::Choice::kRequired && !r.has_tools()) {
    throw invalid_request("'tool_choice' required needs 'tools'", "tool_choice");
  }
  return r;
}

}  // namespace slimkv
