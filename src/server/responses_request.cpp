#include "server/responses_request.h"

#include <fmt/format.h>

#include <string>

#include "server/api_error.h"
#include "server/json_field.h"

namespace slimkv {
namespace {

using ojson = nlohmann::ordered_json;


std::string str(const ojson& o, const char* key, const std::string& where, const char* param) {
  const ojson* v = json_field(o, key);
  if (!v || !v->is_string()) throw invalid_request(fmt::format("{} needs a string '{}'", where, key), param);
  return v->get<std::string>();
}

// A message's content: a string, or parts of type input_text / output_text / text (joined).
std::string content_text(const ojson& c, const std::string& where) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) throw invalid_request(where + ".content must be a string or an array of parts", "input");
  std::string out;
  for (const ojson& p : c) {
    const std::string type = p.is_object() ? str(p, "type", where + ".content[]", "input") : "";
    if (type != "input_text" && type != "output_text" && type != "text") {
      throw invalid_request(fmt::format("{}: content parts of type '{}' are not supported (text only)", where,
                                        type.substr(0, 32)),
                            "input");
    }
    out += str(p, "text", where + ".content[]", "input");
  }
  return out;
}

struct InputBuilder {
  ojson messages = ojson::array();
  std::string reasoning;  // a reasoning item's text, for the assistant turn after it

  ojson& assistant_turn() {  // the open assistant message (function calls join it), or a new one
    if (messages.empty() || messages.back()["role"] != "assistant") {
      messages.push_back({{"role", "assistant"}, {"content", ""}});
    }
    ojson& m = messages.back();
    if (!reasoning.empty()) m["reasoning_content"] = std::move(reasoning), reasoning.clear();
    return m;
  }

  void add(const ojson& item, size_t i) {
    const std::string where = fmt::format("input[{}]", i);
    if (!item.is_object()) throw invalid_request(where + " must be an object", "input");
    const ojson* type = json_field(item, "type");
    const std::string t = type && type->is_string() ? type->get<std::string>() : "message";
    if (t == "message") {
      const std::string role = str(item, "role", where, "input");
      if (role != "user" && role != "assistant" && role != "system" && role != "developer") {
        throw invalid_request(fmt::format("{}.role '{}' is not one of user, assistant, system, developer", where,
                                          role.substr(0, 32)),
                              "input");
      }
      const ojson* c = json_field(item, "content");
      if (!c) throw invalid_request(where + " needs 'content'", "input");
      if (role == "assistant") {
        messages.push_back({{"role", "assistant"}, {"content", content_text(*c, where)}});
        if (!reasoning.empty()) messages.back()["reasoning_content"] = reasoning, reasoning.clear();
      } else {
        messages.push_back({{"role", role}, {"content", content_text(*c, where)}});
      }
    } else if (t == "function_call") {
      ojson& m = assistant_turn();
      if (!m.contains("tool_calls")) m["tool_calls"] = ojson::array();
      m["tool_calls"].push_back({{"id", str(item, "call_id", where, "input")},
                                 {"type", "function"},
                                 {"function", {{"name", str(item, "name", where, "input")},
                                               {"arguments", str(item, "arguments", where, "input")}}}});
    } else if (t == "function_call_output") {
      const ojson* out = json_field(item, "output");
      std::string text;
      if (out && out->is_string()) text = out->get<std::string>();
      else if (out) text = content_text(*out, where);
      messages.push_back({{"role", "tool"}, {"tool_call_id", str(item, "call_id", where, "input")}, {"content", text}});
    } else if (t == "reasoning") {
      for (const char* key : {"summary", "content"}) {
        const ojson* parts = json_field(item, key);
        if (!parts || !parts->is_array()) continue;
        for (const ojson& p : *parts) {
          if (p.is_object() && p.contains("text") && p["text"].is_string()) reasoning += p["text"].get<std::string>();
        }
      }
    } else {
      throw invalid_request(fmt::format("{}: items of type '{}' are not supported", where, t.substr(0, 32)), "input");
    }
  }
};

ojson tools_of(const ojson& tools) {
  if (!tools.is_array()) throw invalid_request("'tools' must be an array", "tools");
  ojson out = ojson::array();
  for (const ojson& t : tools) {
    if (!t.is_object() || str(t, "type", "tools[]", "tools") != "function") {
      throw invalid_request("only function tools are supported", "tools");
    }
    ojson fn = {{"name", str(t, "name", "tools[]", "tools")}};
    if (const ojson* d = json_field(t, "description")) fn["description"] = *d;
    fn["parameters"] = json_field(t, "parameters") ? t["parameters"] : ojson::object();
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

void format_of(const ojson& text, ojson& chat) {
  if (!text.is_object()) throw invalid_request("'text' must be an object", "text");
  const ojson* f = json_field(text, "format");
  if (!f) return;
  const std::string type = f->is_object() ? str(*f, "type", "text.format", "text") : "";
  if (type == "text") return;
  if (type == "json_object") {
    chat["response_format"] = {{"type", "json_object"}};
  } else if (type == "json_schema") {
    ojson js = {{"name", json_field(*f, "name") ? (*f)["name"] : ojson("response")}};
    const ojson* schema = json_field(*f, "schema");
    if (!schema) throw invalid_request("text.format json_schema needs a 'schema'", "text");
    js["schema"] = *schema;
    if (const ojson* s = json_field(*f, "strict")) js["strict"] = *s;
    chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(js)}};
  } else {
    throw invalid_request("text.format.type must be text, json_object or json_schema", "text");
  }
}

}  // namespace

ResponsesRequest responses_to_chat_body(const ojson& body, ResponseStore& store) {
  if (!body.is_object()) throw invalid_request("the body must be a JSON object");
  for (const char* k : {"conversation", "prompt"}) {
    if (json_field(body, k)) throw invalid_request(fmt::format("'{}' is not supported by this server", k), k);
  }
  if (const ojson* b = json_field(body, "background"); b && *b != false) {
    throw invalid_request("'background' responses are not supported by this server", "background");
  }
  ResponsesRequest r;
  ojson& chat = r.chat_body;
  chat = ojson::object();
  if (const ojson* m = json_field(body, "model")) chat["model"] = *m;
  InputBuilder in;
  if (const ojson* prev = json_field(body, "previous_response_id")) {
    if (!prev->is_string()) throw invalid_request("'previous_response_id' must be a string", "previous_response_id");
    auto stored = store.get(prev->get<std::string>());
    if (!stored) {
      throw invalid_request(fmt::format("previous response '{}' not found (this server keeps the last {} stored "
                                        "responses, each for {} s, in memory)",
                                        prev->get<std::string>().substr(0, 64), kStoredResponsesMax,
                                        kStoredResponseSeconds),
                            "previous_response_id");
    }
    in.messages = std::move(*stored);
  }
  const ojson* input = json_field(body, "input");
  if (!input) throw invalid_request("'input' is required", "input");
  if (input->is_string()) {
    in.messages.push_back({{"role", "user"}, {"content", *input}});
  } else if (input->is_array() && !input->empty()) {
    for (size_t i = 0; i < input->size(); ++i) in.add((*input)[i], i);
  } else {
    throw invalid_request("'input' must be a string or a non-empty array of items", "input");
  }
  r.conversation = in.messages;
  ojson messages = ojson::array();
  if (const ojson* ins = json_field(body, "instructions")) {
    if (!ins->is_string()) throw invalid_request("'instructions' must be a string", "instructions");
    messages.push_back({{"role", "system"}, {"content", *ins}});
  }
  for (const ojson& m : in.messages) messages.push_back(m);
  chat["messages"] = std::move(messages);
  if (const ojson* n = json_field(body, "max_output_tokens")) chat["max_tokens"] = *n;
  for (const char* k : {"temperature", "top_p", "stream", "parallel_tool_calls", "tool_choice"}) {
    if (const ojson* v = json_field(body, k)) chat[k] = *v;
  }
  if (const ojson* tc = json_field(body, "tool_choice"); tc && tc->is_object()) {  // {type: function, name}
    chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", str(*tc, "name", "tool_choice", "tool_choice")}}}};
  }
  if (chat.value("stream", false) == true) chat["stream_options"] = {{"include_usage", true}};
  if (const ojson* t = json_field(body, "tools")) chat["tools"] = tools_of(*t);
  if (const ojson* t = json_field(body, "text")) format_of(*t, chat);
  if (const ojson* rs = json_field(body, "reasoning")) {
    if (!rs->is_object()) throw invalid_request("'reasoning' must be an object", "reasoning");
    if (const ojson* e = json_field(*rs, "effort")) {
      chat["chat_template_kwargs"] = {{"enable_thinking", *e != "none" && *e != "minimal"}};
    }
  }
  if (const ojson* s = json_field(body, "store")) {
    if (!s->is_boolean()) throw invalid_request("'store' must be a boolean", "store");
    r.store = s->get<bool>();
  }
  r.echo = ojson::object();
  for (const char* k : {"instructions", "max_output_tokens", "temperature", "top_p", "tools", "tool_choice",
                        "parallel_tool_calls", "text", "reasoning", "previous_response_id", "metadata"}) {
    r.echo[k] = json_field(body, k) ? body[k] : ojson(nullptr);
  }
  return r;
}

}  // namespace slimkv
