#include "server/anthropic_request.h"

#include <fmt/format.h>

#include <string>

#include "server/api_error.h"
#include "server/json_field.h"

namespace slimkv {
namespace {

using ojson = nlohmann::ordered_json;


std::string str(const ojson& o, const char* key, const std::string& where) {
  const ojson* v = json_field(o, key);
  if (!v || !v->is_string()) throw invalid_request(fmt::format("{} needs a string '{}'", where, key), where);
  return v->get<std::string>();
}

// A string, or text blocks joined (system prompts, tool results).
std::string text_of(const ojson& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) throw invalid_request(fmt::format("'{}' must be a string or an array of text blocks", where), where);
  std::string out;
  for (const ojson& b : v) {
    if (!b.is_object() || str(b, "type", where) != "text") {
      throw invalid_request(fmt::format("'{}' takes text blocks only", where), where);
    }
    out += str(b, "text", where);
  }
  return out;
}

// One Anthropic message -> one or more chat messages appended to `out`.
void add_message(const ojson& m, size_t i, ojson& out) {
  const std::string where = fmt::format("messages[{}]", i);
  if (!m.is_object()) throw invalid_request(where + " must be an object", "messages");
  const std::string role = str(m, "role", where);
  if (role != "user" && role != "assistant") {
    throw invalid_request(fmt::format("{}.role must be 'user' or 'assistant' (got '{}')", where, role.substr(0, 32)),
                          "messages");
  }
  const ojson* content = json_field(m, "content");
  if (!content) throw invalid_request(where + " needs 'content'", "messages");
  if (content->is_string()) {
    out.push_back({{"role", role}, {"content", *content}});
    return;
  }
  if (!content->is_array()) throw invalid_request(where + ".content must be a string or an array of blocks", "messages");
  std::string text, thinking;
  ojson calls = ojson::array();
  for (const ojson& b : *content) {
    if (!b.is_object()) throw invalid_request(where + ".content must hold objects", "messages");
    const std::string type = str(b, "type", where + ".content[]");
    if (type == "text") {
      text += str(b, "text", where + ".content[]");
    } else if (type == "tool_use" && role == "assistant") {
      const ojson* input = json_field(b, "input");
      calls.push_back({{"id", str(b, "id", where + ".content[]")},
                       {"type", "function"},
                       {"function", {{"name", str(b, "name", where + ".content[]")},
                                     {"arguments", (input ? *input : ojson::object()).dump()}}}});
    } else if (type == "tool_result" && role == "user") {
      const ojson* c = json_field(b, "content");
      out.push_back({{"role", "tool"},
                     {"tool_call_id", str(b, "tool_use_id", where + ".content[]")},
                     {"content", c ? text_of(*c, where + ".content[].content") : ""}});
    } else if (type == "thinking" && role == "assistant") {
      thinking += str(b, "thinking", where + ".content[]");
    } else if (type == "redacted_thinking" && role == "assistant") {
      continue;  // opaque to this server: nothing to render
    } else {
      throw invalid_request(fmt::format("{}: content blocks of type '{}' are not supported in a {} message", where,
                                        type.substr(0, 32), role),
                            "messages");
    }
  }
  if (role == "user" && text.empty() && !out.empty() && out.back()["role"] == "tool") return;  // results only
  ojson msg = {{"role", role}, {"content", text}};
  if (!calls.empty()) msg["tool_calls"] = std::move(calls);
  if (!thinking.empty()) msg["reasoning_content"] = thinking;
  out.push_back(std::move(msg));
}

ojson tools_of(const ojson& tools) {
  if (!tools.is_array()) throw invalid_request("'tools' must be an array", "tools");
  ojson out = ojson::array();
  for (const ojson& t : tools) {
    if (!t.is_object()) throw invalid_request("each tool must be an object", "tools");
    if (const ojson* type = json_field(t, "type"); type && *type != "custom") {
      throw invalid_request("only client tools (name, description, input_schema) are supported", "tools");
    }
    ojson fn = {{"name", str(t, "name", "tools[]")}};
    if (const ojson* d = json_field(t, "description")) fn["description"] = *d;
    const ojson* schema = json_field(t, "input_schema");
    if (!schema || !schema->is_object()) throw invalid_request("each tool needs an 'input_schema' object", "tools");
    fn["parameters"] = *schema;
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

void tool_choice_of(const ojson& c, ojson& chat) {
  if (!c.is_object()) throw invalid_request("'tool_choice' must be an object", "tool_choice");
  const std::string type = str(c, "type", "tool_choice");
  if (type == "auto") chat["tool_choice"] = "auto";
  else if (type == "any") chat["tool_choice"] = "required";
  else if (type == "none") chat["tool_choice"] = "none";
  else if (type == "tool") chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", str(c, "name", "tool_choice")}}}};
  else throw invalid_request(fmt::format("unknown tool_choice type '{}'", type.substr(0, 32)), "tool_choice");
  if (const ojson* p = json_field(c, "disable_parallel_tool_use")) {
    if (!p->is_boolean()) throw invalid_request("'disable_parallel_tool_use' must be a boolean", "tool_choice");
    chat["parallel_tool_calls"] = !p->get<bool>();
  }
}

}  // namespace

ojson messages_to_chat_body(const ojson& body) {
  if (!body.is_object()) throw invalid_request("the body must be a JSON object");
  ojson chat = ojson::object();
  if (const ojson* m = json_field(body, "model")) chat["model"] = *m;
  const ojson* max_tokens = json_field(body, "max_tokens");
  if (!max_tokens) throw invalid_request("'max_tokens' is required", "max_tokens");
  if (!max_tokens->is_number_integer() || max_tokens->get<int64_t>() < 1) {
    throw invalid_request("'max_tokens' must be an integer >= 1", "max_tokens");
  }
  chat["max_tokens"] = *max_tokens;
  ojson messages = ojson::array();
  if (const ojson* s = json_field(body, "system")) {
    messages.push_back({{"role", "system"}, {"content", text_of(*s, "system")}});
  }
  const ojson* msgs = json_field(body, "messages");
  if (!msgs || !msgs->is_array() || msgs->empty()) {
    throw invalid_request("'messages' must be a non-empty array", "messages");
  }
  for (size_t i = 0; i < msgs->size(); ++i) add_message((*msgs)[i], i, messages);
  chat["messages"] = std::move(messages);
  for (const char* k : {"temperature", "top_p", "top_k", "stream"}) {
    if (const ojson* v = json_field(body, k)) chat[k] = *v;
  }
  if (const ojson* s = json_field(body, "stop_sequences")) {
    if (!s->is_array()) throw invalid_request("'stop_sequences' must be an array of strings", "stop_sequences");
    for (const ojson& e : *s) {
      if (!e.is_string()) throw invalid_request("'stop_sequences' must be an array of strings", "stop_sequences");
    }
    if (!s->empty()) chat["stop"] = *s;
  }
  if (chat.value("stream", false) == true) chat["stream_options"] = {{"include_usage", true}};
  if (const ojson* t = json_field(body, "tools")) chat["tools"] = tools_of(*t);
  if (const ojson* c = json_field(body, "tool_choice")) tool_choice_of(*c, chat);
  if (const ojson* th = json_field(body, "thinking")) {
    const std::string type = th->is_object() ? str(*th, "type", "thinking") : "";
    if (type != "enabled" && type != "disabled") {
      throw invalid_request("'thinking' must be {\"type\": \"enabled\" | \"disabled\", ...}", "thinking");
    }
    chat["chat_template_kwargs"] = {{"enable_thinking", type == "enabled"}};
  }
  if (const ojson* md = json_field(body, "metadata"); md && !md->is_object()) {
    throw invalid_request("'metadata' must be an object", "metadata");
  }
  for (const char* k : {"container", "mcp_servers", "service_tier"}) {
    if (json_field(body, k)) throw invalid_request(fmt::format("'{}' is not supported by this server", k), k);
  }
  return chat;
}

}  // namespace slimkv
