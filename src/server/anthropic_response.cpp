#include "server/anthropic_response.h"

#include <fmt/format.h>

namespace slimkv {
namespace {

using ojson = nlohmann::ordered_json;  // keys in the documented order (type first)

std::string event(const char* type, const ojson& data) {
  ojson e = {{"type", type}};
  for (auto it = data.begin(); it != data.end(); ++it) e[it.key()] = it.value();
  return fmt::format("event: {}\ndata: {}\n\n", type, e.dump(-1, ' ', false, ojson::error_handler_t::replace));
}

std::string message_id(const ojson& chat) {  // chatcmpl-<hex> -> msg_<hex>
  const std::string id = chat.value("id", std::string("chatcmpl-0"));
  const size_t dash = id.find('-');
  return "msg_" + (dash == std::string::npos ? id : id.substr(dash + 1));
}

ojson tool_input(const ojson& call) {  // the arguments' JSON text as an object ({} when it is not JSON)
  const std::string args = call.value("/function/arguments"_json_pointer, std::string("{}"));
  ojson parsed = ojson::parse(args, nullptr, false);
  return parsed.is_discarded() ? ojson::object() : parsed;
}

}  // namespace

std::string anthropic_stop_reason(const std::string& finish_reason) {
  if (finish_reason == "length") return "max_tokens";
  if (finish_reason == "tool_calls") return "tool_use";
  return "end_turn";
}

std::string chat_completion_to_message(const std::string& chat_json) {
  const ojson chat = ojson::parse(chat_json);
  const ojson& choice = chat.at("choices").at(0);
  const ojson& m = choice.at("message");
  ojson content = ojson::array();
  if (m.contains("reasoning_content") && m["reasoning_content"].is_string()) {
    content.push_back({{"type", "thinking"}, {"thinking", m["reasoning_content"]}, {"signature", ""}});
  }
  if (m.contains("content") && m["content"].is_string() && !m["content"].get<std::string>().empty()) {
    content.push_back({{"type", "text"}, {"text", m["content"]}});
  }
  if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
    for (const ojson& c : m["tool_calls"]) {
      content.push_back({{"type", "tool_use"}, {"id", c.value("id", std::string())},
                         {"name", c.value("/function/name"_json_pointer, std::string())}, {"input", tool_input(c)}});
    }
  }
  const ojson& u = chat.at("usage");
  const ojson out = {{"id", message_id(chat)},
                    {"type", "message"},
                    {"role", "assistant"},
                    {"model", chat.value("model", std::string())},
                    {"content", std::move(content)},
                    {"stop_reason", anthropic_stop_reason(choice.value("finish_reason", std::string("stop")))},
                    {"stop_sequence", nullptr},
                    {"usage", {{"input_tokens", u.value("prompt_tokens", 0)},
                               {"output_tokens", u.value("completion_tokens", 0)}}}};
  return out.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string anthropic_error_text(const ApiError& e) {
  const char* type = e.status == 401   ? "authentication_error"
                     : e.status == 403 ? "permission_error"
                     : e.status == 404 ? "not_found_error"
                     : e.status == 413 ? "request_too_large"
                     : e.status == 429 ? "rate_limit_error"
                     : e.status == 503 ? "overloaded_error"
                     : e.status >= 500 ? "api_error"
                                       : "invalid_request_error";
  const ojson j = {{"type", "error"}, {"error", {{"type", type}, {"message", e.what()}}}};
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string MessageStreamTranslator::close() {
  if (index_ < 0 || kind_.empty()) return "";
  kind_.clear();
  return event("content_block_stop", {{"index", index_}});
}

std::string MessageStreamTranslator::open(const std::string& kind, ojson block) {
  std::string out = close();
  ++index_;
  kind_ = kind;
  return out + event("content_block_start", {{"index", index_}, {"content_block", std::move(block)}});
}

std::string MessageStreamTranslator::on_chunk(const ojson& chunk) {
  std::string out;
  if (!started_) {
    started_ = true;
    ojson msg = {{"id", message_id(chunk)}, {"type", "message"}, {"role", "assistant"},
                {"model", chunk.value("model", std::string())}, {"content", ojson::array()},
                {"stop_reason", nullptr}, {"stop_sequence", nullptr},
                {"usage", {{"input_tokens", 0}, {"output_tokens", 0}}}};
    out += event("message_start", {{"message", std::move(msg)}});
  }
  if (chunk.contains("usage") && chunk["usage"].is_object()) {
    const ojson& u = chunk["usage"];
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer()) input_tokens_ = u["prompt_tokens"];
    if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer()) {
      output_tokens_ = u["completion_tokens"];
    }
  }
  const auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object()) return out;
  const ojson& choice = (*choices)[0];
  const ojson delta = choice.contains("delta") && choice["delta"].is_object() ? choice["delta"] : ojson::object();
  if (delta.contains("reasoning_content") && delta["reasoning_content"].is_string()) {
    if (kind_ != "thinking") out += open("thinking", {{"type", "thinking"}, {"thinking", ""}});
    out += event("content_block_delta", {{"index", index_},
                                         {"delta", {{"type", "thinking_delta"}, {"thinking", delta["reasoning_content"]}}}});
  }
  if (delta.contains("content") && delta["content"].is_string() && !delta["content"].get<std::string>().empty()) {
    if (kind_ != "text") out += open("text", {{"type", "text"}, {"text", ""}});
    out += event("content_block_delta",
                 {{"index", index_}, {"delta", {{"type", "text_delta"}, {"text", delta["content"]}}}});
  }
  if (delta.contains("tool_calls") && delta["tool_calls"].is_array()) {
    for (const ojson& c : delta["tool_calls"]) {
      const std::string kind = fmt::format("tool_use:{}", c.value("index", 0));
      if (kind_ != kind) {
        out += open(kind, {{"type", "tool_use"}, {"id", c.value("id", std::string())},
                           {"name", c.value("/function/name"_json_pointer, std::string())}, {"input", ojson::object()}});
      }
      const std::string args = c.value("/function/arguments"_json_pointer, std::string());
      if (!args.empty()) {
        out += event("content_block_delta",
                     {{"index", index_}, {"delta", {{"type", "input_json_delta"}, {"partial_json", args}}}});
      }
    }
  }
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
    finish_reason_ = choice["finish_reason"].get<std::string>();
  }
  return out;
}

std::string MessageStreamTranslator::feed(const std::string& chat_sse) {
  sse_.append(chat_sse);
  std::string out, data;
  while (!finished_ && sse_.next(&data)) {
    if (data == "[DONE]") {
      out += close();
      out += event("message_delta", {{"delta", {{"stop_reason", anthropic_stop_reason(finish_reason_)},
                                                {"stop_sequence", nullptr}}},
                                     {"usage", {{"input_tokens", input_tokens_}, {"output_tokens", output_tokens_}}}});
      out += event("message_stop", ojson::object());
      finished_ = true;
      break;
    }
    const ojson chunk = ojson::parse(data, nullptr, false);
    if (!chunk.is_object()) continue;
    if (chunk.contains("error")) {  // the chat stream's error event: Anthropic's, then the stream ends
      const ojson& e = chunk["error"];
      const std::string msg = e.is_object() && e.contains("message") && e["message"].is_string() ? e["message"] : "";
      out += event("error", {{"error", {{"type", "api_error"}, {"message", msg}}}});
      finished_ = true;
      break;
    }
    out += on_chunk(chunk);
  }
  return out;
}

}  // namespace slimkv
