#include "server/output_stream_parser.h"

#include <initializer_list>

namespace slimkv {

// Helpers live in a named namespace: the library compiles as unity batches (file-scope names must be unique).
namespace output_stream_parser_detail {

namespace mk = chat_markers;
using sv = std::string_view;
constexpr size_t npos = std::string::npos;
constexpr size_t kMaxHarmonyHeader = 512;  // a header longer than this without <|message|> is not one

bool all_space(sv s) { return s.find_first_not_of(" \t\r\n") == npos; }
bool starts_with(sv s, sv prefix) { return s.substr(0, prefix.size()) == prefix; }

// The earliest full occurrence of any marker, else the earliest suffix of `s` that is a proper prefix of one.
struct Found {
  size_t pos = npos, len = 0;
  bool full = false;
  sv which;
};
Found find_any(sv s, std::initializer_list<sv> markers) {
  Found f;
  for (sv m : markers) {
    if (m.empty()) continue;
    size_t p = s.find(m);
    if (p != npos && (!f.full || p < f.pos)) f = Found{p, m.size(), true, m};
  }
  if (f.full) return f;
  for (sv m : markers) {
    if (m.empty()) continue;
    for (size_t k = std::min(m.size() - 1, s.size()); k > 0; --k) {
      if (s.size() - k < f.pos && s.substr(s.size() - k) == m.substr(0, k)) {
        f = Found{s.size() - k, k, false, m};
        break;
      }
    }
  }
  return f;
}

// Llama 3's reply-is-a-call start: [? { "name" or "type" (spaces allowed between).
enum class Prefix { kNo, kMaybe, kYes };
Prefix llama3_call_prefix(sv s) {
  size_t i = 0;
  auto skip_space = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  };
  if (i < s.size() && s[i] == '[') ++i;
  skip_space();
  if (i == s.size()) return Prefix::kMaybe;
  if (s[i++] != '{') return Prefix::kNo;
  skip_space();
  if (i == s.size()) return Prefix::kMaybe;
  if (s[i++] != '"') return Prefix::kNo;
  sv rest = s.substr(i);
  Prefix best = Prefix::kNo;
  for (sv key : {sv("name\""), sv("type\"")}) {
    if (starts_with(rest, key)) return Prefix::kYes;
    if (starts_with(key, rest)) best = Prefix::kMaybe;
  }
  return best;
}

}  // namespace output_stream_parser_detail

namespace osp = output_stream_parser_detail;

OutputStreamParser::OutputStreamParser(ChatFormat f, bool thinking_started_in_prompt, CallIdGenerator ids)
    : format_(f), ids_(ids ? std::move(ids) : random_call_ids()) {
  if (f.tools == ToolCallFormat::kHarmony || f.reasoning == ReasoningFormat::kHarmony) {
    state_ = State::kHarmonyHeader;  // the channels are read either way; calls only with kHarmony tools
  } else if (f.reasoning == ReasoningFormat::kThinkTags && thinking_started_in_prompt) {
    state_ = State::kReasoning;
  }
}

std::vector<StreamEvent> OutputStreamParser::feed(std::string_view delta) {
  buf_.append(delta);
  return drain(false);
}

std::vector<StreamEvent> OutputStreamParser::finish() { return drain(true); }

std::vector<StreamEvent> OutputStreamParser::drain(bool final) {
  while (step(final)) {
  }
  std::vector<StreamEvent> out;
  out.swap(out_);
  return out;
}

bool OutputStreamParser::step(bool final) {
  switch (state_) {
    case State::kContent:
      return step_content(final);
    case State::kReasoning:
      return step_reasoning(final);
    case State::kHarmonyHeader:
      return step_harmony_header(final);
    case State::kHarmonyBody:
      return step_harmony_body(final);
    case State::kHarmonyPlain:
      return step_harmony_plain(final);
  }
  return false;
}

void OutputStreamParser::emit(StreamEvent::Kind kind, std::string_view text) {
  if (text.empty()) return;
  if (!out_.empty() && out_.back().kind == kind && kind != StreamEvent::kToolCallStart &&
      kind != StreamEvent::kToolCallArguments) {
    out_.back().text.append(text);
    return;
  }
  StreamEvent e;
  e.kind = kind;
  e.text = std::string(text);
  out_.push_back(std::move(e));
}

void OutputStreamParser::emit_call(const std::string& name, const std::string& arguments) {
  StreamEvent start;
  start.kind = StreamEvent::kToolCallStart;
  start.tool_index = calls_;
  start.id = ids_();
  start.name = name;
  out_.push_back(std::move(start));
  StreamEvent args;
  args.kind = StreamEvent::kToolCallArguments;
  args.tool_index = calls_;
  args.text = arguments;
  out_.push_back(std::move(args));
  ++calls_;
}

OutputStreamParser::Marker OutputStreamParser::next_marker() const {
  namespace mk = chat_markers;
  std::string_view s = buf_, call_opener;
  switch (format_.tools) {
    case ToolCallFormat::kHermes:
      call_opener = mk::kHermesOpen;
      break;
    case ToolCallFormat::kDeepSeekV3:
      call_opener = mk::kDsCallsBegin;
      break;
    case ToolCallFormat::kMistral:
      call_opener = mk::kMistralCalls;
      break;
    case ToolCallFormat::kLlama3Json:
      call_opener = mk::kPythonTag;
      break;
    default:
      break;
  }
  const bool think = format_.reasoning == ReasoningFormat::kThinkTags;
  osp::Found f = osp::find_any(s, {call_opener, think ? mk::kThinkOpen : std::string_view()});  // empty: none
  Marker m{f.pos, f.len, f.full, f.which == mk::kThinkOpen};
  if (format_.tools == ToolCallFormat::kLlama3Json && boundary_) {
    size_t first = s.find_first_not_of(" \t\r\n");
    if (first != osp::npos && (m.pos == osp::npos || first < m.pos)) {
      osp::Prefix p = osp::llama3_call_prefix(s.substr(first));
      if (p != osp::Prefix::kNo) m = Marker{first, 0, p == osp::Prefix::kYes, false};
    }
  }
  return m;
}

// One past the construct that opens at m (its closing marker, or the end of the output), or npos: not yet known.
size_t OutputStreamParser::construct_end(const Marker& m, bool final) const {
  std::string_view close;
  if (format_.tools == ToolCallFormat::kHermes) close = chat_markers::kHermesClose;
  if (format_.tools == ToolCallFormat::kDeepSeekV3) close = chat_markers::kDsCallsEnd;
  if (!close.empty()) {
    size_t c = buf_.find(close, m.pos + m.len);
    if (c != osp::npos) return c + close.size();
  }
  return final ? buf_.size() : osp::npos;
}

bool OutputStreamParser::step_content(bool final) {
  if (buf_.empty()) return false;
  Marker m = next_marker();
  if (!m.full && (m.pos == osp::npos || final)) {  // nothing here can become a marker
    if (boundary_ && osp::all_space(buf_)) {       // framing unless content follows
      if (!final) return false;
      if (calls_ == 0) emit(StreamEvent::kContent, buf_);
    } else {
      emit(StreamEvent::kContent, buf_);
      boundary_ = false;
    }
    buf_.clear();
    return false;
  }
  std::string_view pre(buf_.data(), m.pos);
  const bool framing = boundary_ && osp::all_space(pre);  // dropped if a marker's construct follows
  auto release_pre = [&] {
    if (framing || pre.empty()) return;
    emit(StreamEvent::kContent, pre);
    boundary_ = false;
    buf_.erase(0, m.pos);
  };
  if (!m.full) {  // may be a marker's start: hold it
    release_pre();
    return false;
  }
  if (m.think) {
    if (!framing) emit(StreamEvent::kContent, pre);
    buf_.erase(0, m.pos + m.len);
    state_ = State::kReasoning;
    boundary_ = true;
    return true;
  }
  size_t end = construct_end(m, final);
  if (end == osp::npos) {
    release_pre();
    return false;
  }
  auto calls = parse_call_construct(format_.tools, std::string_view(buf_).substr(m.pos, end - m.pos));
  if (calls) {
    if (!framing) emit(StreamEvent::kContent, pre);
    for (const CallSyntax& c : *calls) emit_call(c.name, c.arguments);
    buf_.erase(0, end);
    boundary_ = true;
    return true;
  }
  // Malformed: the opener is text; reading resumes after it.
  emit(StreamEvent::kContent, std::string_view(buf_).substr(0, m.pos + m.len));
  buf_.erase(0, m.pos + m.len);
  boundary_ = false;
  return true;
}

bool OutputStreamParser::step_reasoning(bool final) {
  if (buf_.empty()) return false;
  osp::Found f = osp::find_any(buf_, {chat_markers::kThinkClose});
  if (f.full) {
    emit(StreamEvent::kReasoning, std::string_view(buf_).substr(0, f.pos));
    buf_.erase(0, f.pos + f.len);
    state_ = State::kContent;
    boundary_ = true;
    return true;
  }
  size_t keep = final || f.pos == osp::npos ? buf_.size() : f.pos;
  emit(StreamEvent::kReasoning, std::string_view(buf_).substr(0, keep));
  buf_.erase(0, keep);
  return false;
}

bool OutputStreamParser::step_harmony_header(bool final) {
  namespace mk = chat_markers;
  if (buf_.empty()) return false;
  size_t opener = 0;
  bool maybe = false;
  for (std::string_view s :
       {mk::kHarmonyStart, mk::kHarmonyChannel, std::string_view(" to="), std::string_view("to=")}) {
    if (osp::starts_with(buf_, s)) {
      opener = s.size();
      break;
    }
    if (osp::starts_with(s, buf_)) maybe = true;
  }
  if (opener == 0) {
    if (maybe && !final) return false;
    state_ = State::kHarmonyPlain;
    return true;
  }
  size_t msg = buf_.find(mk::kHarmonyMessage);
  if (msg == osp::npos && !final && buf_.size() < osp::kMaxHarmonyHeader + mk::kHarmonyMessage.size())
    return false;  // the header is still coming
  if (msg != osp::npos && msg <= osp::kMaxHarmonyHeader) {
    std::optional<HarmonyHeader> h = parse_harmony_header(std::string_view(buf_).substr(0, msg));
    if (h && (h->kind != HarmonyHeader::kToolCall || format_.tools == ToolCallFormat::kHarmony)) {
      harmony_ = *h;
      harmony_header_ = buf_.substr(0, msg + mk::kHarmonyMessage.size());
      buf_.erase(0, msg + mk::kHarmonyMessage.size());
      state_ = State::kHarmonyBody;
      return true;
    }
  }
  // Not a header: its opener is text; reading resumes after it.
  emit(StreamEvent::kContent, std::string_view(buf_).substr(0, opener));
  buf_.erase(0, opener);
  state_ = State::kHarmonyPlain;
  return true;
}

bool OutputStreamParser::step_harmony_body(bool final) {
  namespace mk = chat_markers;
  osp::Found f = osp::find_any(buf_, {mk::kHarmonyEnd, mk::kHarmonyCall, mk::kHarmonyReturn, mk::kHarmonyStart});
  // A following <|start|> ends the message without being consumed (it opens the next header).
  size_t consumed = f.full ? f.pos + (f.which == mk::kHarmonyStart ? 0 : f.len) : buf_.size();
  if (harmony_.kind != HarmonyHeader::kToolCall) {
    auto kind = harmony_.kind == HarmonyHeader::kReasoning ? StreamEvent::kReasoning : StreamEvent::kContent;
    if (!f.full && !final) {  // stream the body, holding a possible terminator back
      size_t keep = f.pos == osp::npos ? buf_.size() : f.pos;
      emit(kind, std::string_view(buf_).substr(0, keep));
      buf_.erase(0, keep);
      return false;
    }
    emit(kind, std::string_view(buf_).substr(0, f.full ? f.pos : buf_.size()));
  } else {
    if (!f.full && !final) return false;  // a call is settled whole
    std::string_view body = std::string_view(buf_).substr(0, f.full ? f.pos : buf_.size());
    if (std::optional<std::string> args = compact_json_arguments(body)) {
      emit_call(harmony_.function, *args);
    } else {
      emit(StreamEvent::kContent, harmony_header_);
      emit(StreamEvent::kContent, body);
    }
  }
  buf_.erase(0, consumed);
  state_ = State::kHarmonyHeader;
  return !buf_.empty();
}

// Text outside any message (after a malformed header): content until the next header or terminator.
bool OutputStreamParser::step_harmony_plain(bool final) {
  namespace mk = chat_markers;
  if (buf_.empty()) return false;
  osp::Found f = osp::find_any(
      buf_, {mk::kHarmonyStart, mk::kHarmonyChannel, mk::kHarmonyEnd, mk::kHarmonyCall, mk::kHarmonyReturn});
  if (!f.full) {
    size_t keep = final || f.pos == osp::npos ? buf_.size() : f.pos;
    emit(StreamEvent::kContent, std::string_view(buf_).substr(0, keep));
    buf_.erase(0, keep);
    return false;
  }
  emit(StreamEvent::kContent, std::string_view(buf_).substr(0, f.pos));
  const bool opens_header = f.which == mk::kHarmonyStart || f.which == mk::kHarmonyChannel;
  buf_.erase(0, f.pos + (opens_header ? 0 : f.len));
  state_ = State::kHarmonyHeader;
  return true;
}

}  // namespace slimkv
