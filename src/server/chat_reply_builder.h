// One chat choice's reply as the client sees it: plain content; content, reasoning_content and tool_calls parsed
// out of the model's text in the chat template's format (tool_call_format.h, output_stream_parser.h); or a forced
// tool call (tool_choice required / named: the text is the calls' JSON, as vLLM forces it). Streaming deltas and
// the whole reply agree. Must not know: HTTP, the engine or tokens.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/openai_response.h"
#include "server/output_stream_parser.h"
#include "server/tool_request.h"

namespace slimkv {

struct ReplyMode {
  ChatFormat format;                      // what to parse out of free text (kNone, kNone: plain content)
  bool thinking_in_prompt = false;        // the rendered prompt left a <think> open
  ToolRequest::Choice forced = ToolRequest::Choice::kNone;  // kRequired / kNamed: the text is tool-call JSON
  std::string forced_name;                // kNamed
  bool active() const {
    return format.tools != ToolCallFormat::kNone || format.reasoning != ReasoningFormat::kNone ||
           forced == ToolRequest::Choice::kRequired || forced == ToolRequest::Choice::kNamed;
  }
};

class ChatReplyBuilder {
 public:
  ChatReplyBuilder(ReplyMode mode, CallIdGenerator ids);
  // Stream: the delta objects ({"content"}, {"reasoning_content"}, {"tool_calls": [...]}) that text settles.
  std::vector<nlohmann::json> feed(const std::string& text);
  std::vector<nlohmann::json> finish();
  bool called_tools() const { return called_; }
  // Whole: the reply for the choice's full text (a new id per call).
  ChatReply reply(const std::string& text);

 private:
  bool forced() const;
  std::vector<nlohmann::json> forced_feed(const std::string& text, bool final);

  ReplyMode mode_;
  CallIdGenerator ids_;
  std::unique_ptr<OutputStreamParser> parser_;
  std::string forced_text_;   // kRequired: the JSON so far (its calls are emitted once it parses)
  bool named_started_ = false;
  bool called_ = false;
};

// kRequired's text [{"name": ..., "parameters": {...}}, ...] as tool calls; empty when it does not parse.
std::vector<ToolCall> forced_calls(const std::string& text, const CallIdGenerator& ids);

}  // namespace slimkv
