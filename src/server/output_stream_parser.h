// One generation's text turned into OpenAI-style delta events as it is decoded: content, reasoning, and tool calls
// (id and name first, then the arguments). Text that may be the start of a marker is held back until it is known
// not to be one; a tool call is held until it is complete and valid, and a malformed one comes back as content.
// For any split of a text the events add up to parse_output's result. Must not know: HTTP, JSON responses, the
// engine or tokenizers (it sees decoded text with the format's special tokens spelled out).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_call_format.h"

namespace slimkv {

struct StreamEvent {
  enum Kind { kContent, kReasoning, kToolCallStart, kToolCallArguments } kind = kContent;
  std::string text;      // kContent / kReasoning / kToolCallArguments: the delta
  int tool_index = -1;   // kToolCallStart / kToolCallArguments: 0, 1, ... in order of the calls
  std::string id, name;  // kToolCallStart
};

class OutputStreamParser {
 public:
  // ids: the tool call id generator (empty: random_call_ids()).
  OutputStreamParser(ChatFormat f, bool thinking_started_in_prompt, CallIdGenerator ids = {});
  // Appends a decoded delta; returns the events it settles (adjacent text of one kind merged into one event).
  std::vector<StreamEvent> feed(std::string_view delta);
  // The end of the generation: settles everything held back.
  std::vector<StreamEvent> finish();
  bool saw_tool_call() const { return calls_ > 0; }
  int tool_call_count() const { return calls_; }

 private:
  enum class State { kContent, kReasoning, kHarmonyHeader, kHarmonyBody, kHarmonyPlain };
  struct Marker {
    size_t pos = std::string::npos;  // where the marker starts in buf_
    size_t len = 0;
    bool full = false;   // false: buf_ ends with what may still become the marker
    bool think = false;  // <think> rather than a tool-call opener
  };

  std::vector<StreamEvent> drain(bool final);
  bool step(bool final);  // false: nothing more can be settled now
  bool step_content(bool final);
  bool step_reasoning(bool final);
  bool step_harmony_header(bool final);
  bool step_harmony_body(bool final);
  bool step_harmony_plain(bool final);
  Marker next_marker() const;
  size_t construct_end(const Marker& m, bool final) const;
  void emit(StreamEvent::Kind kind, std::string_view text);
  void emit_call(const std::string& name, const std::string& arguments);

  ChatFormat format_;
  CallIdGenerator ids_;
  State state_ = State::kContent;
  std::string buf_;  // decoded text not settled yet
  std::vector<StreamEvent> out_;
  bool boundary_ = true;  // at the start, after </think> or after a call: whitespace here may be framing
  int calls_ = 0;
  HarmonyHeader harmony_;       // kHarmonyBody: the message being read
  std::string harmony_header_;  // its header text, <|message|> included (a malformed call's content)
};

}  // namespace slimkv
