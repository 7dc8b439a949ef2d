// Builds the OpenAI response objects: completion and chat responses, their streaming chunks, usage and logprobs.
// Pure functions over plain data. Must not know: the engine, sockets or how the tokens were produced.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace slimkv {

class Tokenizer;

struct ResponseHeader {  // shared by every object of one response
  std::string id;        // cmpl-… / chatcmpl-…
  int64_t created = 0;   // unix seconds
  std::string model;
  bool chat = false;
};

struct TokenLogprobEntry {  // one generated token, for `logprobs`
  std::string text;         // the token's bytes (may be a partial UTF-8 character)
  float logprob = 0.0f;
  std::vector<std::pair<std::string, float>> top;
};

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};

nlohmann::json usage_json(const Usage& u);
// `logprobs` of a choice or chunk: completions' {tokens, token_logprobs, top_logprobs, text_offset} or chat's
// {content: [{token, logprob, bytes, top_logprobs}]}. text_offset0: offset of the first entry in the choice's text.
nlohmann::json logprobs_json(bool chat, const std::vector<TokenLogprobEntry>& entries, int64_t text_offset0);

// A finished choice of a non-streaming response.
nlohmann::json choice_json(bool chat, int32_t index, const std::string& text, const std::string& finish_reason,
                           const nlohmann::json& logprobs);
// A chat reply with what was parsed out of the model's text (server/tool_call_format.h): content (null when only
// tool calls), reasoning_content, tool_calls ([{id, type, function: {name, arguments}}]).
struct ChatReply {
  std::string content, reasoning;
  nlohmann::json tool_calls;  // null or an array of tool_call_json
};
nlohmann::json chat_reply_choice_json(int32_t index, const ChatReply& r, const std::string& finish_reason,
                                      const nlohmann::json& logprobs);
nlohmann::json tool_call_json(const std::string& id, const std::string& name, const std::string& arguments);
// A chat chunk with any delta object ({"reasoning_content": ...}, {"tool_calls": [...]}, ...).
nlohmann::json delta_chunk_json(const ResponseHeader& h, int32_t index, nlohmann::json delta,
                                const nlohmann::json& logprobs, const std::string& finish_reason);
nlohmann::json response_json(const ResponseHeader& h, nlohmann::json choices, const Usage& u);
// A streaming chunk for one choice: a text delta (chat's first chunk also carries the role), or the finishing chunk.
nlohmann::json chunk_json(const ResponseHeader& h, int32_t index, const std::string* role, const std::string& text,
                          const nlohmann::json& logprobs, const std::string& finish_reason);
nlohmann::json usage_chunk_json(const ResponseHeader& h, const Usage& u);  // choices: [] + usage
// "data: {json}\n\n" (invalid UTF-8 replaced, never a throw).
std::string sse_event(const nlohmann::json& j);
std::string dump_json(const nlohmann::json& j);

}  // namespace slimkv
