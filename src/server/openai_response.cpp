#include "server/openai_response.h"

namespace slimkv {

using nlohmann::json;

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

namespace {

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

}  // namespace

json logprobs_json(bool chat, const std::vector<TokenLogprobEntry>& entries, int64_t text_offset0) {
  if (chat) {
    json content = json::array();
    for (const auto& e : entries) {
      json top = json::array();
      for (const auto& [t, lp] : e.top) top.push_back({{"token", t}, {"logprob", lp}, {"bytes", bytes_of(t)}});
      content.push_back({{"token", e.text}, {"logprob", e.logprob}, {"bytes", bytes_of(e.text)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  int64_t off = text_offset0;
  for (const auto& e : entries) {
    tokens.push_back(e.text);
    lps.push_back(e.logprob);
    json top = json::object();
    for (const auto& [t, lp] : e.top) {
      if (!top.contains(t)) top[t] = lp;  // pieces may coincide as text; keep the more likely
    }
    tops.push_back(top);
    offsets.push_back(off);
    off += static_cast<int64_t>(e.text.size());
  }
  return {{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json choice_json(bool chat, int32_t index, const std::string& text, const std::string& finish_reason,
                 const json& logprobs) {
  json c = {{"index", index}, {"logprobs", logprobs}, {"finish_reason", finish_reason}};
  if (chat) c["message"] = {{"role", "assistant"}, {"content", text}};
  else c["text"] = text;
  return c;
}

json chat_reply_choice_json(int32_t index, const ChatReply& r, const std::string& finish_reason, const json& logprobs) {
  json m = {{"role", "assistant"}};
  m["content"] = r.content.empty() && r.tool_calls.is_array() && !r.tool_calls.empty() ? json(nullptr) : json(r.content);
  if (!r.reasoning.empty()) m["reasoning_content"] = r.reasoning;
  if (r.tool_calls.is_array() && !r.tool_calls.empty()) m["tool_calls"] = r.tool_calls;
  return {{"index", index}, {"logprobs", logprobs}, {"finish_reason", finish_reason}, {"message", std::move(m)}};
}

json tool_call_json(const std::string& id, const std::string& name, const std::string& arguments) {
  return {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
}

json delta_chunk_json(const ResponseHeader& h, int32_t index, json delta, const json& logprobs,
                      const std::string& finish_reason) {
  json c = {{"index", index}, {"logprobs", logprobs},
            {"finish_reason", finish_reason.empty() ? json(nullptr) : json(finish_reason)},
            {"delta", std::move(delta)}};
  return {{"id", h.id},
          {"object", "chat.completion.chunk"},
          {"created", h.created},
          {"model", h.model},
          {"choices", json::array({c})}};
}

json response_json(const ResponseHeader& h, json choices, const Usage& u) {
  return {{"id", h.id},
          {"object", h.chat ? "chat.completion" : "text_completion"},
          {"created", h.created},
          {"model", h.model},
          {"choices", std::move(choices)},
          {"usage", usage_json(u)}};
}

json chunk_json(const ResponseHeader& h, int32_t index, const std::string* role, const std::string& text,
                const json& logprobs, const std::string& finish_reason) {
  json c = {{"index", index}, {"logprobs", logprobs},
            {"finish_reason", finish_reason.empty() ? json(nullptr) : json(finish_reason)}};
  if (h.chat) {
    json delta = json::object();
    if (role) delta["role"] = *role;
    if (role || !text.empty() || finish_reason.empty()) delta["content"] = text;
    c["delta"] = delta;
  } else {
    c["text"] = text;
  }
  return {{"id", h.id},
          {"object", h.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", h.created},
          {"model", h.model},
          {"choices", json::array({c})}};
}

json usage_chunk_json(const ResponseHeader& h, const Usage& u) {
  return {{"id", h.id},
          {"object", h.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", h.created},
          {"model", h.model},
          {"choices", json::array()},
          {"usage", usage_json(u)}};
}

}  // namespace slimkv
