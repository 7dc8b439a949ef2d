// The output side of a chat template's tool-call and reasoning syntax: which format a template speaks
// (detect_chat_format), the parse of one tool-call construct of each format, and parse_output, a generated
// text's OpenAI fields (content, reasoning_content, tool_calls). Pure functions over strings; malformed syntax
// comes back as content, never as an exception. Must not know: HTTP, the engine, tokenizers or the Jinja engine.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace slimkv {

enum class ToolCallFormat {
  kNone,
  kHermes,      // Qwen3 / Hermes: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
  kLlama3Json,  // Llama 3.x: {"name": ..., "parameters": {...}} as the whole reply (optionally after <|python_tag|>)
  kDeepSeekV3,  // <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```
                // <｜tool▁call▁end｜><｜tool▁calls▁end｜> (V3.1's NAME<｜tool▁sep｜>{...} inside a call too)
  kHarmony,  // gpt-oss: <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}<|call|>
  kMistral,  // [TOOL_CALLS][{"name": ..., "arguments": {...}}] (and the newer [TOOL_CALLS]NAME[ARGS]{...})
};
enum class ReasoningFormat {
  kNone,
  kThinkTags,  // <think>...</think> (Qwen3, DeepSeek R1 / V3.1); the opening tag may be in the prompt already
  kHarmony,    // gpt-oss's analysis channel
};
struct ChatFormat {
  ToolCallFormat tools = ToolCallFormat::kNone;
  ReasoningFormat reasoning = ReasoningFormat::kNone;
};
// The marker strings, as the real templates render them (../shared/data/real-tokenizers/*).
namespace chat_markers {
inline constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";
inline constexpr std::string_view kHermesOpen = "<tool_call>", kHermesClose = "</tool_call>";
inline constexpr std::string_view kPythonTag = "<|python_tag|>";
inline constexpr std::string_view kDsCallsBegin = "<｜tool▁calls▁begin｜>", kDsCallsEnd = "<｜tool▁calls▁end｜>";
inline constexpr std::string_view kDsCallBegin = "<｜tool▁call▁begin｜>", kDsCallEnd = "<｜tool▁call▁end｜>";
inline constexpr std::string_view kDsSep = "<｜tool▁sep｜>";
inline constexpr std::string_view kMistralCalls = "[TOOL_CALLS]", kMistralArgs = "[ARGS]", kMistralId = "[CALL_ID]";
inline constexpr std::string_view kHarmonyStart = "<|start|>", kHarmonyChannel = "<|channel|>";
inline constexpr std::string_view kHarmonyMessage = "<|message|>", kHarmonyConstrain = "<|constrain|>";
inline constexpr std::string_view kHarmonyEnd = "<|end|>", kHarmonyCall = "<|call|>", kHarmonyReturn = "<|return|>";
}  // namespace chat_markers

const char* to_string(ToolCallFormat f);
const char* to_string(ReasoningFormat f);

// From a Jinja chat template's source (each family's markers), or from a short family name ("qwen3", "llama3",
// "deepseek-v3", "deepseek-r1", "gpt-oss", "mistral", "hermes"). Unknown: {kNone, kNone}.
ChatFormat detect_chat_format(std::string_view chat_template_source);
// Whether a rendered prompt leaves a <think> open at its end (DeepSeek R1's generation prompt), i.e. the value of
// parse_output's / OutputStreamParser's thinking_started_in_prompt.
bool prompt_opens_thinking(const ChatFormat& f, std::string_view rendered_prompt);

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // a compact JSON object text
};
struct ParsedOutput {
  std::string content;
  std::string reasoning_content;
  std::vector<ToolCall> tool_calls;
};

// Tool call ids: "call_" + 24 random alphanumerics. The seeded form makes a parse reproducible; any generator may
// be passed instead (e.g. Mistral's templates want 9-character ids back).
using CallIdGenerator = std::function<std::string()>;
CallIdGenerator random_call_ids();               // seeded from std::random_device
CallIdGenerator seeded_call_ids(uint64_t seed);  // the same ids for the same seed

// A generated text's OpenAI fields: exactly what OutputStreamParser's events add up to for the same text. The text
// is the decoded reply with the format's special tokens spelled out (decoded without skip_special_tokens) and
// without its stop token (<|call|>, <|im_end|>, ... may be absent: a call running to the end is complete). All that
// is not a marker comes back as content, reasoning or a call's arguments (re-serialised compactly); besides markers,
// only whitespace between a boundary (the start, </think>, a call) and a call, or trailing after a call, is dropped.
ParsedOutput parse_output(const ChatFormat& f, std::string_view text, bool thinking_started_in_prompt,
                          CallIdGenerator ids = {});

// One tool-call construct of a format, whole (its opening marker included; `text` runs to its closing marker or
// to the end of the output): the calls' names and compact arguments (ids left empty), or nullopt when malformed.
struct CallSyntax {
  std::string name;
  std::string arguments;
};
std::optional<std::vector<CallSyntax>> parse_call_construct(ToolCallFormat f, std::string_view text);
// gpt-oss: a message header (what precedes <|message|>) and its body.
struct HarmonyHeader {
  enum Kind { kReasoning, kContent, kToolCall } kind = kContent;
  std::string function;  // kToolCall: the name after to=functions.
};
std::optional<HarmonyHeader> parse_harmony_header(std::string_view header);
std::optional<std::string> compact_json_arguments(std::string_view json_text);  // an object's compact text

}  // namespace slimkv
