// The chat path's answer in Anthropic's Messages encoding: a finished chat completion as a `message` object
// (thinking, text and tool_use blocks; stop_reason; usage), a chat completion's SSE chunks as Messages stream events
// (message_start, content_block_start / _delta / _stop, message_delta, message_stop), an ApiError as Anthropic's
// error object. Pure text transforms over the chat encoding. Must not know: the engine, sockets or the tokenizer.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "server/sse_data.h"

#include "server/api_error.h"

namespace slimkv {

// finish_reason -> stop_reason: stop -> end_turn, length -> max_tokens, tool_calls -> tool_use. (A stop sequence
// ends a turn as end_turn with stop_sequence null: the chat path does not say which stop string matched.)
std::string anthropic_stop_reason(const std::string& finish_reason);

// A non-streamed chat completion's JSON text -> the Messages response's JSON text (one choice: Messages has no n).
std::string chat_completion_to_message(const std::string& chat_json);

// {"type": "error", "error": {"type": invalid_request_error | authentication_error | not_found_error |
// rate_limit_error | overloaded_error | api_error, "message"}} for an ApiError's status.
std::string anthropic_error_text(const ApiError& e);

// Turns a chat completion's SSE bytes, as they come, into Messages events ("event: T\ndata: {...}\n\n"). A text
// block, a thinking block and each tool call open and close in the order their deltas arrive; the turn ends at
// the chat stream's [DONE] with the finish reason and usage seen before it.
class MessageStreamTranslator {
 public:
  std::string feed(const std::string& chat_sse);
  bool finished() const { return finished_; }

 private:
  std::string on_chunk(const nlohmann::ordered_json& chunk);
  std::string open(const std::string& kind, nlohmann::ordered_json block);  // closes the current block first
  std::string close();
  SseData sse_;                   // the chat stream's data payloads
  bool started_ = false, finished_ = false;
  int32_t index_ = -1;            // the open block's index (-1: none)
  std::string kind_;              // "text" | "thinking" | "tool_use:<chat tool index>"
  std::string finish_reason_ = "stop";
  int64_t input_tokens_ = 0, output_tokens_ = 0;
};

}  // namespace slimkv
