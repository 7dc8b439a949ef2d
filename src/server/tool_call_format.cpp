#include "server/tool_call_format.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "core/bounded_json.h"
#include "server/output_stream_parser.h"

namespace slimkv {

// Helpers live in a named namespace: the library compiles as unity batches (file-scope names must be unique).
namespace tool_call_format_detail {

using ojson = nlohmann::ordered_json;
namespace mk = chat_markers;

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }
bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::optional<ojson> parse_json(std::string_view text) {  // generated text: linear, under the default caps
  ojson j = parse_bounded_json_or_discarded(text);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

std::optional<std::string> dump_object(const ojson& j) {
  if (!j.is_object()) return std::nullopt;
  try {
    return j.dump();
  } catch (const nlohmann::json::exception&) {  // invalid UTF-8 inside a string
    return std::nullopt;
  }
}

// {"name": ..., "arguments" | "parameters": {...} or a JSON text of one}, with an optional "type": "function" and
// (Mistral) "id". Any other key means the object is not a call (ordinary JSON output that happens to have a name).
std::optional<CallSyntax> call_from_object(const ojson& j, bool require_arguments) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  CallSyntax call{j["name"].get<std::string>(), "{}"};
  if (call.name.empty()) return std::nullopt;
  int args_keys = 0;
  for (const auto& [key, value] : j.items()) {
    if (key == "name" || key == "id") continue;
    if (key == "type") {
      if (value != "function") return std::nullopt;
      continue;
    }
    if (key != "arguments" && key != "parameters") return std::nullopt;
    if (++args_keys > 1) return std::nullopt;
    std::optional<std::string> args =
        value.is_string() ? compact_json_arguments(value.get<std::string>()) : dump_object(value);
    if (!args) return std::nullopt;
    call.arguments = *args;
  }
  if (require_arguments && args_keys == 0) return std::nullopt;
  return call;
}

// Where the JSON object or array starting at text[pos] ends (one past its closing bracket), or npos.
size_t json_value_end(std::string_view text, size_t pos) {
  if (pos >= text.size() || (text[pos] != '{' && text[pos] != '[')) return std::string_view::npos;
  int depth = 0;
  bool in_string = false;
  for (size_t i = pos; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// One JSON value that is a call object or an array of them.
bool append_calls(const ojson& j, bool require_arguments, std::vector<CallSyntax>& out) {
  if (j.is_array()) {
    if (j.empty()) return false;
    for (const auto& e : j)
      if (!append_calls(e, require_arguments, out) || e.is_array()) return false;
    return true;
  }
  std::optional<CallSyntax> call = call_from_object(j, require_arguments);
  if (call) out.push_back(std::move(*call));
  return call.has_value();
}

std::optional<std::vector<CallSyntax>> parse_hermes(std::string_view text) {
  if (text.substr(0, mk::kHermesOpen.size()) != mk::kHermesOpen ||
      text.size() < mk::kHermesOpen.size() + mk::kHermesClose.size() ||
      text.substr(text.size() - mk::kHermesClose.size()) != mk::kHermesClose)
    return std::nullopt;
  std::string_view body =
      text.substr(mk::kHermesOpen.size(), text.size() - mk::kHermesOpen.size() - mk::kHermesClose.size());
  std::optional<ojson> j = parse_json(trim(body));
  std::vector<CallSyntax> calls;
  if (!j || !j->is_object() || !append_calls(*j, /*require_arguments=*/false, calls)) return std::nullopt;
  return calls;
}

// Llama 3: the rest of the reply is one call object, an array of them, or several separated by ';' or spaces.
std::optional<std::vector<CallSyntax>> parse_llama3(std::string_view text) {
  if (text.substr(0, mk::kPythonTag.size()) == mk::kPythonTag) text.remove_prefix(mk::kPythonTag.size());
  text = trim(text);
  std::vector<CallSyntax> calls;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = json_value_end(text, pos);
    if (end == std::string_view::npos) return std::nullopt;
    std::optional<ojson> j = parse_json(text.substr(pos, end - pos));
    if (!j || !append_calls(*j, /*require_arguments=*/true, calls)) return std::nullopt;
    pos = text.find_first_not_of(" \t\r\n;", end);  // the next call, after spaces or ';'
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

// The V3 body "function<｜tool▁sep｜>NAME\n```json\n{...}\n```" or V3.1's "NAME<｜tool▁sep｜>{...}".
std::optional<CallSyntax> parse_deepseek_call(std::string_view call) {
  size_t sep = call.find(mk::kDsSep);
  if (sep == std::string_view::npos) return std::nullopt;
  std::string_view head = trim(call.substr(0, sep)), rest = call.substr(sep + mk::kDsSep.size());
  CallSyntax out;
  size_t nl = rest.find('\n');
  if (head == "function" && nl != std::string_view::npos) {
    out.name = std::string(trim(rest.substr(0, nl)));
    std::string_view args = trim(rest.substr(nl + 1));
    if (args.substr(0, 3) == "```") {
      size_t line_end = args.find('\n');
      if (line_end == std::string_view::npos || args.size() < 6 || args.substr(args.size() - 3) != "```")
        return std::nullopt;
      args = args.substr(line_end + 1, args.size() - 3 - line_end - 1);
    }
    rest = args;
  } else {
    out.name = std::string(head);
  }
  std::optional<std::string> args = compact_json_arguments(trim(rest));
  if (out.name.empty() || out.name.find_first_of(" \t\n") != std::string::npos || !args) return std::nullopt;
  out.arguments = *args;
  return out;
}

std::optional<std::vector<CallSyntax>> parse_deepseek(std::string_view text) {
  if (text.substr(0, mk::kDsCallsBegin.size()) != mk::kDsCallsBegin) return std::nullopt;
  text.remove_prefix(mk::kDsCallsBegin.size());
  size_t close = text.find(mk::kDsCallsEnd);  // absent only at the end of the output (a lenient end)
  if (close != std::string_view::npos) {
    if (close + mk::kDsCallsEnd.size() != text.size()) return std::nullopt;
    text = text.substr(0, close);
  }
  std::vector<CallSyntax> calls;
  for (std::string_view rest = trim(text); !rest.empty(); rest = trim(rest)) {
    if (rest.substr(0, mk::kDsCallBegin.size()) != mk::kDsCallBegin) return std::nullopt;
    rest.remove_prefix(mk::kDsCallBegin.size());
    size_t end = rest.find(mk::kDsCallEnd);
    if (end == std::string_view::npos) return std::nullopt;
    std::optional<CallSyntax> call = parse_deepseek_call(rest.substr(0, end));
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    rest.remove_prefix(end + mk::kDsCallEnd.size());
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

// "[TOOL_CALLS][{...}, ...]" (v3 tokenizers) or "[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}" repeated (v11+).
std::optional<std::vector<CallSyntax>> parse_mistral(std::string_view text) {
  std::vector<CallSyntax> calls;
  while (!text.empty()) {
    if (text.substr(0, mk::kMistralCalls.size()) != mk::kMistralCalls) return std::nullopt;
    text.remove_prefix(mk::kMistralCalls.size());
    size_t next = text.find(mk::kMistralCalls);
    std::string_view part = text.substr(0, next), body = trim(part);
    text = next == std::string_view::npos ? std::string_view{} : text.substr(next);
    if (!body.empty() && (body[0] == '[' || body[0] == '{')) {
      std::optional<ojson> j = parse_json(body);
      if (!j || !append_calls(*j, /*require_arguments=*/false, calls)) return std::nullopt;
      continue;
    }
    size_t args = body.find(mk::kMistralArgs);
    if (args == std::string_view::npos) return std::nullopt;
    std::string_view name = body.substr(0, std::min(args, body.find(mk::kMistralId)));
    std::optional<std::string> arguments = compact_json_arguments(body.substr(args + mk::kMistralArgs.size()));
    if (name.empty() || name.find_first_of(" \t\n[]{}") != std::string_view::npos || !arguments) return std::nullopt;
    calls.push_back(CallSyntax{std::string(name), *arguments});
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A short family name rather than a template's source.
std::optional<ChatFormat> format_from_name(std::string_view source) {
  if (source.size() > 64 || contains(source, "{")) return std::nullopt;
  std::string n = lower(source);
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("gpt-oss") || has("gpt_oss") || has("harmony"))
    return ChatFormat{ToolCallFormat::kHarmony, ReasoningFormat::kHarmony};
  if (has("deepseek") && has("v4"))  // its own renderer (chat_template.h); its call syntax is not known here
    return ChatFormat{ToolCallFormat::kNone, ReasoningFormat::kThinkTags};
  if (has("deepseek") && (has("r1") || has("v3.1") || has("v3_1")))
    return ChatFormat{ToolCallFormat::kDeepSeekV3, ReasoningFormat::kThinkTags};
  if (has("deepseek")) return ChatFormat{ToolCallFormat::kDeepSeekV3, ReasoningFormat::kNone};
  if (has("qwen3")) return ChatFormat{ToolCallFormat::kHermes, ReasoningFormat::kThinkTags};
  if (has("qwen") || has("hermes")) return ChatFormat{ToolCallFormat::kHermes, ReasoningFormat::kNone};
  if (has("llama3") || has("llama-3") || has("llama_3")) return ChatFormat{ToolCallFormat::kLlama3Json, {}};
  if (has("mistral") || has("mixtral")) return ChatFormat{ToolCallFormat::kMistral, ReasoningFormat::kNone};
  return std::nullopt;
}

}  // namespace tool_call_format_detail

namespace tcf = tool_call_format_detail;

const char* to_string(ToolCallFormat f) {  // in the enum's order
  static const char* const kNames[] = {"none", "hermes", "llama3_json", "deepseek_v3", "harmony", "mistral"};
  return kNames[static_cast<int>(f)];
}

const char* to_string(ReasoningFormat f) {
  static const char* const kNames[] = {"none", "think_tags", "harmony"};
  return kNames[static_cast<int>(f)];
}

ChatFormat detect_chat_format(std::string_view src) {
  namespace mk = chat_markers;
  if (std::optional<ChatFormat> named = tcf::format_from_name(src)) return *named;
  ChatFormat f;
  if (tcf::contains(src, mk::kHarmonyChannel) || tcf::contains(src, mk::kHarmonyCall))
    return ChatFormat{ToolCallFormat::kHarmony, ReasoningFormat::kHarmony};
  if (tcf::contains(src, mk::kHermesOpen))
    f.tools = ToolCallFormat::kHermes;
  else if (tcf::contains(src, mk::kDsCallsBegin) || tcf::contains(src, mk::kDsCallBegin))
    f.tools = ToolCallFormat::kDeepSeekV3;
  else if (tcf::contains(src, mk::kMistralCalls) || tcf::contains(src, "[AVAILABLE_TOOLS]"))
    f.tools = ToolCallFormat::kMistral;
  else if (tcf::contains(src, mk::kPythonTag) || tcf::contains(src, "<|start_header_id|>"))
    f.tools = ToolCallFormat::kLlama3Json;  // Llama 3.x (tools as JSON after "Environment: ipython")
  else if (tcf::contains(src, "[INST]") && !tcf::contains(src, "<<SYS>>"))
    f.tools = ToolCallFormat::kMistral;  // the family's older templates (its v3+ tokenizers emit [TOOL_CALLS])
  if (tcf::contains(src, mk::kThinkOpen) || tcf::contains(src, mk::kThinkClose))
    f.reasoning = ReasoningFormat::kThinkTags;
  return f;
}

bool prompt_opens_thinking(const ChatFormat& f, std::string_view prompt) {
  if (f.reasoning != ReasoningFormat::kThinkTags) return false;
  size_t open = prompt.rfind(chat_markers::kThinkOpen);
  if (open == std::string_view::npos) return false;
  size_t close = prompt.rfind(chat_markers::kThinkClose);
  return (close == std::string_view::npos || close < open) &&
         tcf::trim(prompt.substr(open + chat_markers::kThinkOpen.size())).empty();
}

CallIdGenerator seeded_call_ids(uint64_t seed) {
  auto rng = std::make_shared<std::mt19937_64>(seed);
  return [rng] {
    static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    std::uniform_int_distribution<int> pick(0, 61);
    std::string id = "call_";
    for (int i = 0; i < 24; ++i) id += kAlnum[pick(*rng)];
    return id;
  };
}

CallIdGenerator random_call_ids() {
  std::random_device rd;
  return seeded_call_ids((static_cast<uint64_t>(rd()) << 32) ^ rd());
}

std::optional<std::string> compact_json_arguments(std::string_view json_text) {
  std::optional<tcf::ojson> j = tcf::parse_json(json_text);
  if (!j) return std::nullopt;
  return tcf::dump_object(*j);
}

std::optional<std::vector<CallSyntax>> parse_call_construct(ToolCallFormat f, std::string_view text) {
  switch (f) {
    case ToolCallFormat::kHermes:
      return tcf::parse_hermes(text);
    case ToolCallFormat::kLlama3Json:
      return tcf::parse_llama3(text);
    case ToolCallFormat::kDeepSeekV3:
      return tcf::parse_deepseek(text);
    case ToolCallFormat::kMistral:
      return tcf::parse_mistral(text);
    case ToolCallFormat::kHarmony:
    case ToolCallFormat::kNone:
      break;
  }
  return std::nullopt;
}

std::optional<HarmonyHeader> parse_harmony_header(std::string_view header) {
  namespace mk = chat_markers;
  if (header.substr(0, mk::kHarmonyStart.size()) == mk::kHarmonyStart) {
    header.remove_prefix(mk::kHarmonyStart.size());
    if (header.substr(0, 9) != "assistant") return std::nullopt;
    header.remove_prefix(9);
  }
  for (size_t lt = header.find("<|"); lt != std::string_view::npos; lt = header.find("<|", lt + 1)) {
    std::string_view at = header.substr(lt);  // only <|channel|> and <|constrain|> belong after the role
    if (!tcf::starts_with(at, mk::kHarmonyChannel) && !tcf::starts_with(at, mk::kHarmonyConstrain)) return std::nullopt;
  }
  size_t ch = header.find(mk::kHarmonyChannel);
  if (ch == std::string_view::npos || header.find(mk::kHarmonyChannel, ch + 1) != std::string_view::npos)
    return std::nullopt;
  std::string_view after = header.substr(ch + mk::kHarmonyChannel.size());
  std::string_view channel = after.substr(0, after.find_first_of(" <\t\n"));
  std::string recipient;
  for (size_t to = header.find("to="); to != std::string_view::npos; to = header.find("to=", to + 1)) {
    if (to > 0 && header[to - 1] != ' ' && header[to - 1] != '>') continue;
    if (!recipient.empty()) return std::nullopt;
    std::string_view r = header.substr(to + 3);
    recipient = std::string(r.substr(0, r.find_first_of(" <\t\n")));
    if (recipient.empty()) return std::nullopt;
  }
  HarmonyHeader h;
  if (!recipient.empty()) {
    if (recipient.rfind("functions.", 0) != 0 || recipient.size() == 10) return std::nullopt;  // built-in tools
    h.kind = HarmonyHeader::kToolCall;
    h.function = recipient.substr(10);
    return channel == "commentary" || channel == "analysis" ? std::optional<HarmonyHeader>(h) : std::nullopt;
  }
  if (channel == "analysis")
    h.kind = HarmonyHeader::kReasoning;
  else if (channel == "final" || channel == "commentary")
    h.kind = HarmonyHeader::kContent;
  else
    return std::nullopt;
  return h;
}

ParsedOutput parse_output(const ChatFormat& f, std::string_view text, bool thinking_started_in_prompt,
                          CallIdGenerator ids) {
  OutputStreamParser parser(f, thinking_started_in_prompt, std::move(ids));
  std::vector<StreamEvent> events = parser.feed(text);
  std::vector<StreamEvent> tail = parser.finish();
  events.insert(events.end(), tail.begin(), tail.end());
  ParsedOutput out;
  for (StreamEvent& e : events) {
    switch (e.kind) {
      case StreamEvent::kContent:
        out.content += e.text;
        break;
      case StreamEvent::kReasoning:
        out.reasoning_content += e.text;
        break;
      case StreamEvent::kToolCallStart:
        out.tool_calls.push_back(ToolCall{e.id, e.name, ""});
        break;
      case StreamEvent::kToolCallArguments:
        out.tool_calls.at(e.tool_index).arguments += e.text;
        break;
    }
  }
  return out;
}

}  // namespace slimkv
