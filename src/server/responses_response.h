// The chat path's answer in the Responses encoding: a finished chat completion as a Response object (reasoning,
// message and function_call output items; status; usage), a chat stream's chunks as the typed Responses events
// (response.created … response.output_text.delta … response.completed, each with its sequence_number), and the
// answer as the assistant turn a later previous_response_id continues from. Pure text transforms.
// Must not know: the engine, sockets or the tokenizer.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "server/sse_data.h"

namespace slimkv {

// A non-streamed chat completion's JSON text -> the Response's JSON text; *assistant (may be null) = the answer as
// a chat assistant message (content, tool_calls, reasoning_content) for the conversation store, *id (may be null)
// = the Response's id.
std::string chat_completion_to_response(const std::string& chat_json, const nlohmann::ordered_json& echo,
                                        nlohmann::ordered_json* assistant, std::string* id = nullptr);

class ResponsesStreamTranslator {
 public:
  explicit ResponsesStreamTranslator(nlohmann::ordered_json echo) : echo_(std::move(echo)) {}
  std::string feed(const std::string& chat_sse);  // "event: T\ndata: {...}\n\n" per Responses event
  bool finished() const { return finished_; }
  const nlohmann::ordered_json& assistant() const { return assistant_; }  // after finished()
  const std::string& id() const { return id_; }

 private:
  std::string on_chunk(const nlohmann::ordered_json& chunk);
  std::string emit(const char* type, nlohmann::ordered_json data);
  std::string open(const std::string& kind, const nlohmann::ordered_json& chunk_call);
  std::string close();
  nlohmann::ordered_json response(const char* status) const;
  nlohmann::ordered_json echo_;
  SseData sse_;  // the chat stream's data payloads
  std::string id_, hex_, model_, kind_, finish_reason_ = "stop";
  int64_t created_ = 0, seq_ = 0, input_tokens_ = 0, output_tokens_ = 0, cached_tokens_ = 0;
  bool started_ = false, finished_ = false;
  nlohmann::ordered_json output_ = nlohmann::ordered_json::array();  // finished items
  nlohmann::ordered_json item_;                                      // the open item
  std::string text_;                                                 // its text / arguments so far
  nlohmann::ordered_json assistant_ = {{"role", "assistant"}, {"content", ""}};
};

}  // namespace slimkv
