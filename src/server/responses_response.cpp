#include "server/responses_response.h"

#include <fmt/format.h>

namespace slimkv {
namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

std::string hex_of(const ojson& chat) {  // chatcmpl-<hex> -> <hex>
  const std::string id = chat.contains("id") && chat["id"].is_string() ? chat["id"].get<std::string>() : "0";
  const size_t dash = id.find('-');
  return dash == std::string::npos ? id : id.substr(dash + 1);
}

ojson text_part(const std::string& text) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", ojson::array()}};
}

ojson reasoning_item(const std::string& hex, const std::string& text) {
  return {{"id", "rs_" + hex}, {"type", "reasoning"},
          {"summary", ojson::array({{{"type", "summary_text"}, {"text", text}}})}};
}

ojson message_item(const std::string& hex, const std::string& text, const char* status) {
  return {{"id", "msg_" + hex}, {"type", "message"}, {"status", status}, {"role", "assistant"},
          {"content", ojson::array({text_part(text)})}};
}

ojson call_item(const std::string& hex, size_t i, const std::string& call_id, const std::string& name,
                const std::string& args, const char* status) {
  return {{"id", fmt::format("fc_{}_{}", hex, i)}, {"type", "function_call"}, {"status", status},
          {"call_id", call_id}, {"name", name}, {"arguments", args}};
}

ojson usage_of(int64_t in, int64_t out, int64_t cached) {
  return {{"input_tokens", in}, {"input_tokens_details", {{"cached_tokens", cached}}}, {"output_tokens", out},
          {"output_tokens_details", {{"reasoning_tokens", 0}}}, {"total_tokens", in + out}};
}

ojson response_object(const std::string& hex, int64_t created, const std::string& model, const char* status,
                      ojson output, ojson usage, const ojson& echo) {
  ojson r = {{"id", "resp_" + hex}, {"object", "response"}, {"created_at", created}, {"status", status},
             {"error", nullptr},
             {"incomplete_details", std::string(status) == "incomplete"
                                        ? ojson({{"reason", "max_output_tokens"}}) : ojson(nullptr)},
             {"model", model}, {"output", std::move(output)}, {"usage", std::move(usage)}};
  for (auto it = echo.begin(); it != echo.end(); ++it) r[it.key()] = it.value();
  if (r["tools"].is_null()) r["tools"] = ojson::array();
  if (r["tool_choice"].is_null()) r["tool_choice"] = "auto";
  if (r["parallel_tool_calls"].is_null()) r["parallel_tool_calls"] = true;
  if (r["metadata"].is_null()) r["metadata"] = ojson::object();
  if (r["text"].is_null()) r["text"] = {{"format", {{"type", "text"}}}};
  return r;
}

std::string str_at(const ojson& o, const char* key) {
  return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

}  // namespace

std::string chat_completion_to_response(const std::string& chat_json, const ojson& echo, ojson* assistant,
                                        std::string* id) {
  const ojson chat = ojson::parse(chat_json);
  const ojson& choice = chat.at("choices").at(0);
  const ojson& m = choice.at("message");
  const std::string hex = hex_of(chat);
  if (id) *id = "resp_" + hex;
  ojson output = ojson::array();
  if (!str_at(m, "reasoning_content").empty()) output.push_back(reasoning_item(hex, str_at(m, "reasoning_content")));
  if (!str_at(m, "content").empty()) output.push_back(message_item(hex, str_at(m, "content"), "completed"));
  if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
    for (size_t i = 0; i < m["tool_calls"].size(); ++i) {
      const ojson& c = m["tool_calls"][i];
      output.push_back(call_item(hex, i, str_at(c, "id"), str_at(c["function"], "name"),
                                 str_at(c["function"], "arguments"), "completed"));
    }
  }
  if (assistant) {
    *assistant = {{"role", "assistant"}, {"content", str_at(m, "content")}};
    if (m.contains("tool_calls")) (*assistant)["tool_calls"] = m["tool_calls"];
    if (!str_at(m, "reasoning_content").empty()) (*assistant)["reasoning_content"] = m["reasoning_content"];
  }
  const ojson& u = chat.at("usage");
  const int64_t cached = u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object()
                             ? u["prompt_tokens_details"].value("cached_tokens", int64_t{0}) : 0;
  const bool cut = str_at(choice, "finish_reason") == "length";
  return dump(response_object(hex, chat.value("created", int64_t{0}), str_at(chat, "model"),
                              cut ? "incomplete" : "completed", std::move(output),
                              usage_of(u.value("prompt_tokens", int64_t{0}), u.value("completion_tokens", int64_t{0}),
                                       cached),
                              echo));
}

ojson ResponsesStreamTranslator::response(const char* status) const {
  return response_object(hex_, created_, model_, status, output_,
                         usage_of(input_tokens_, output_tokens_, cached_tokens_), echo_);
}

std::string ResponsesStreamTranslator::emit(const char* type, ojson data) {
  ojson e = {{"type", type}, {"sequence_number", seq_++}};
  for (auto it = data.begin(); it != data.end(); ++it) e[it.key()] = it.value();
  return fmt::format("event: {}\ndata: {}\n\n", type, dump(e));
}

std::string ResponsesStreamTranslator::close() {
  if (kind_.empty()) return "";
  std::string out;
  ojson done = item_;
  if (kind_ == "reasoning") {
    done = reasoning_item(hex_, text_);
    ojson part = {{"type", "summary_text"}, {"text", text_}};
    out += emit("response.reasoning_summary_text.done", {{"item_id", item_["id"]}, {"output_index", output_.size()},
                                                         {"summary_index", 0}, {"text", text_}});
    out += emit("response.reasoning_summary_part.done", {{"item_id", item_["id"]}, {"output_index", output_.size()},
                                                         {"summary_index", 0}, {"part", part}});
    assistant_["reasoning_content"] = text_;
  } else if (kind_ == "message") {
    done = message_item(hex_, text_, "completed");
    out += emit("response.output_text.done", {{"item_id", item_["id"]}, {"output_index", output_.size()},
                                              {"content_index", 0}, {"text", text_}, {"logprobs", ojson::array()}});
    out += emit("response.content_part.done", {{"item_id", item_["id"]}, {"output_index", output_.size()},
                                               {"content_index", 0}, {"part", text_part(text_)}});
    assistant_["content"] = text_;
  } else {
    done["arguments"] = text_;
    done["status"] = "completed";
    out += emit("response.function_call_arguments.done", {{"item_id", item_["id"]}, {"output_index", output_.size()},
                                                          {"arguments", text_}});
    if (!assistant_.contains("tool_calls")) assistant_["tool_calls"] = ojson::array();
    assistant_["tool_calls"].push_back({{"id", done["call_id"]}, {"type", "function"},
                                        {"function", {{"name", done["name"]}, {"arguments", text_}}}});
  }
  out += emit("response.output_item.done", {{"output_index", output_.size()}, {"item", done}});
  output_.push_back(std::move(done));
  kind_.clear();
  text_.clear();
  return out;
}

std::string ResponsesStreamTranslator::open(const std::string& kind, const ojson& call) {
  std::string out = close();
  kind_ = kind;
  const size_t at = output_.size();
  if (kind == "reasoning") {
    item_ = {{"id", "rs_" + hex_}, {"type", "reasoning"}, {"summary", ojson::array()}};
    out += emit("response.output_item.added", {{"output_index", at}, {"item", item_}});
    out += emit("response.reasoning_summary_part.added", {{"item_id", item_["id"]}, {"output_index", at},
                                                          {"summary_index", 0},
                                                          {"part", {{"type", "summary_text"}, {"text", ""}}}});
  } else if (kind == "message") {
    item_ = {{"id", "msg_" + hex_}, {"type", "message"}, {"status", "in_progress"}, {"role", "assistant"},
             {"content", ojson::array()}};
    out += emit("response.output_item.added", {{"output_index", at}, {"item", item_}});
    out += emit("response.content_part.added", {{"item_id", item_["id"]}, {"output_index", at}, {"content_index", 0},
                                               {"part", text_part("")}});
  } else {
    const ojson fn = call.contains("function") && call["function"].is_object() ? call["function"] : ojson::object();
    item_ = call_item(hex_, static_cast<size_t>(call.value("index", 0)), str_at(call, "id"), str_at(fn, "name"), "",
                      "in_progress");
    out += emit("response.output_item.added", {{"output_index", at}, {"item", item_}});
  }
  return out;
}

std::string ResponsesStreamTranslator::on_chunk(const ojson& chunk) {
  std::string out;
  if (!started_) {
    started_ = true;
    hex_ = hex_of(chunk);
    id_ = "resp_" + hex_;
    model_ = str_at(chunk, "model");
    created_ = chunk.contains("created") && chunk["created"].is_number_integer() ? chunk["created"].get<int64_t>() : 0;
    out += emit("response.created", {{"response", response("in_progress")}});
    out += emit("response.in_progress", {{"response", response("in_progress")}});
  }
  if (chunk.contains("usage") && chunk["usage"].is_object()) {
    const ojson& u = chunk["usage"];
    input_tokens_ = u.value("prompt_tokens", input_tokens_);
    output_tokens_ = u.value("completion_tokens", output_tokens_);
    if (u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object()) {
      cached_tokens_ = u["prompt_tokens_details"].value("cached_tokens", cached_tokens_);
    }
  }
  const auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object()) return out;
  const ojson& choice = (*choices)[0];
  const ojson delta = choice.contains("delta") && choice["delta"].is_object() ? choice["delta"] : ojson::object();
  if (!str_at(delta, "reasoning_content").empty()) {
    if (kind_ != "reasoning") out += open("reasoning", nullptr);
    text_ += str_at(delta, "reasoning_content");
    out += emit("response.reasoning_summary_text.delta", {{"item_id", item_["id"]}, {"output_index", output_.size()},
                                                          {"summary_index", 0}, {"delta", delta["reasoning_content"]}});
  }
  if (!str_at(delta, "content").empty()) {
    if (kind_ != "message") out += open("message", nullptr);
    text_ += str_at(delta, "content");
    out += emit("response.output_text.delta", {{"item_id", item_["id"]}, {"output_index", output_.size()},
                                               {"content_index", 0}, {"delta", delta["content"]},
                                               {"logprobs", ojson::array()}});
  }
  if (delta.contains("tool_calls") && delta["tool_calls"].is_array()) {
    for (const ojson& c : delta["tool_calls"]) {
      if (!c.is_object()) continue;
      const std::string kind = fmt::format("call:{}", c.value("index", 0));
      if (kind_ != kind) out += open(kind, c);
      const ojson fn = c.contains("function") && c["function"].is_object() ? c["function"] : ojson::object();
      const std::string args = str_at(fn, "arguments");
      if (args.empty()) continue;
      text_ += args;
      out += emit("response.function_call_arguments.delta",
                  {{"item_id", item_["id"]}, {"output_index", output_.size()}, {"delta", args}});
    }
  }
  if (!str_at(choice, "finish_reason").empty()) finish_reason_ = str_at(choice, "finish_reason");
  return out;
}

std::string ResponsesStreamTranslator::feed(const std::string& chat_sse) {
  sse_.append(chat_sse);
  std::string out, data;
  while (!finished_ && sse_.next(&data)) {
    if (data == "[DONE]") {
      out += close();
      const bool cut = finish_reason_ == "length";
      out += emit(cut ? "response.incomplete" : "response.completed",
                  {{"response", response(cut ? "incomplete" : "completed")}});
      finished_ = true;
      break;
    }
    const ojson chunk = ojson::parse(data, nullptr, false);
    if (!chunk.is_object()) continue;
    if (chunk.contains("error")) {
      const ojson& e = chunk["error"];
      out += emit("error", {{"code", nullptr}, {"message", e.is_object() ? str_at(e, "message") : ""},
                            {"param", nullptr}});
      finished_ = true;
      break;
    }
    out += on_chunk(chunk);
  }
  return out;
}

}  // namespace slimkv
