#include "server/chat_reply_builder.h"

#include "core/bounded_json.h"

namespace slimkv {
namespace {

using json = nlohmann::json;

// JSON text the model generated, or discarded: checked by the bounded parser first (linear, nesting and sizes capped
// as a request body's are), then read as a sorted-key json (the arguments' dump order stays as it was).
json parse_generated_json(const std::string& text) {
  if (parse_bounded_json_or_discarded(text).is_discarded()) return json(json::value_t::discarded);
  return json::parse(text, nullptr, /*allow_exceptions=*/false);
}

json tool_delta(int index, const std::string* id, const std::string* name, const std::string& args) {
  json call = {{"index", index}};
  if (id) call["id"] = *id;
  if (id) call["type"] = "function";
  json fn = json::object();
  if (name) fn["name"] = *name;
  fn["arguments"] = args;
  call["function"] = std::move(fn);
  return {{"tool_calls", json::array({call})}};
}

// The parser's events as chunk deltas.
std::vector<json> deltas_of(const std::vector<StreamEvent>& events) {
  std::vector<json> out;
  for (const StreamEvent& e : events) {
    switch (e.kind) {
      case StreamEvent::kContent: out.push_back({{"content", e.text}}); break;
      case StreamEvent::kReasoning: out.push_back({{"reasoning_content", e.text}}); break;
      case StreamEvent::kToolCallStart: out.push_back(tool_delta(e.tool_index, &e.id, &e.name, "")); break;
      case StreamEvent::kToolCallArguments: out.push_back(tool_delta(e.tool_index, nullptr, nullptr, e.text)); break;
    }
  }
  return out;
}

}  // namespace

std::vector<ToolCall> forced_calls(const std::string& text, const CallIdGenerator& ids) {
  std::vector<ToolCall> out;
  const json j = parse_generated_json(text);
  if (!j.is_array()) return out;
  for (const json& c : j) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) return {};
    const json args = c.contains("parameters") ? c["parameters"] : json::object();
    out.push_back({ids(), c["name"].get<std::string>(), args.dump()});
  }
  return out;
}

ChatReplyBuilder::ChatReplyBuilder(ReplyMode mode, CallIdGenerator ids) : mode_(std::move(mode)), ids_(std::move(ids)) {
  if (!ids_) ids_ = random_call_ids();
  if (!forced()) parser_ = std::make_unique<OutputStreamParser>(mode_.format, mode_.thinking_in_prompt, ids_);
}

bool ChatReplyBuilder::forced() const {
  return mode_.forced == ToolRequest::Choice::kRequired || mode_.forced == ToolRequest::Choice::kNamed;
}

std::vector<json> ChatReplyBuilder::forced_feed(const std::string& text, bool final) {
  std::vector<json> out;
  if (mode_.forced == ToolRequest::Choice::kNamed) {  // the text is the arguments: stream them as they come
    if (!named_started_ && (!text.empty() || final)) {
      named_started_ = called_ = true;
      const std::string id = ids_();
      out.push_back(tool_delta(0, &id, &mode_.forced_name, ""));
    }
    if (!text.empty()) out.push_back(tool_delta(0, nullptr, nullptr, text));
    return out;
  }
  forced_text_ += text;  // required: the calls are known once the array is complete
  if (!final) return out;
  const std::vector<ToolCall> calls = forced_calls(forced_text_, ids_);
  if (calls.empty()) {
    if (!forced_text_.empty()) out.push_back({{"content", forced_text_}});
    return out;
  }
  called_ = true;
  for (size_t i = 0; i < calls.size(); ++i) {
    out.push_back(tool_delta(static_cast<int>(i), &calls[i].id, &calls[i].name, ""));
    out.push_back(tool_delta(static_cast<int>(i), nullptr, nullptr, calls[i].arguments));
  }
  return out;
}

std::vector<json> ChatReplyBuilder::feed(const std::string& text) {
  if (forced()) return forced_feed(text, false);
  std::vector<json> out = deltas_of(parser_->feed(text));
  called_ = called_ || parser_->saw_tool_call();
  return out;
}

std::vector<json> ChatReplyBuilder::finish() {
  if (forced()) return forced_feed("", true);
  std::vector<json> out = deltas_of(parser_->finish());
  called_ = called_ || parser_->saw_tool_call();
  return out;
}

ChatReply ChatReplyBuilder::reply(const std::string& text) {
  ChatReply r;
  std::vector<ToolCall> calls;
  if (mode_.forced == ToolRequest::Choice::kNamed) {
    const json args = parse_generated_json(text);
    if (args.is_object()) calls.push_back({ids_(), mode_.forced_name, args.dump()});
    else r.content = text;  // cut short (max_tokens): the text as it is
  } else if (mode_.forced == ToolRequest::Choice::kRequired) {
    calls = forced_calls(text, ids_);
    if (calls.empty()) r.content = text;
  } else {
    ParsedOutput p = parse_output(mode_.format, text, mode_.thinking_in_prompt, ids_);
    r.content = std::move(p.content);
    r.reasoning = std::move(p.reasoning_content);
    calls = std::move(p.tool_calls);
  }
  called_ = !calls.empty();
  if (!calls.empty()) {
    r.tool_calls = json::array();
    for (const ToolCall& c : calls) r.tool_calls.push_back(tool_call_json(c.id, c.name, c.arguments));
  }
  return r;
}

}  // namespace slimkv
