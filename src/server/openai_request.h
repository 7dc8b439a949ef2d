// Parses and validates the body of POST /v1/completions and /v1/chat/completions into plain data.
// Every wrong type, out-of-range number or empty prompt is an ApiError (400) naming the field.
// Must not know: the tokenizer, the engine or HTTP (the prompt stays text or ids here).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/structured_output_request.h"
#include "server/tool_request.h"

namespace slimkv {

struct PromptInput {               // one prompt: text to tokenize, or token ids given by the client
  std::string text;
  std::vector<int64_t> ids;        // int64 so that out-of-vocabulary ids can be reported as given
  bool is_ids = false;
};

// A prompt field as completions read it (and /v1/embeddings' `input`): a string, a list of strings, a list of token
// ids or a list of such lists; empty ones refused naming `key`.
std::vector<PromptInput> parse_prompt_inputs(const nlohmann::ordered_json& body, const char* key);

struct ChatMessage {
  std::string role;                // system | user | assistant | tool | developer
  std::string content;             // text parts joined ("" when null)
  // What the chat template sees (transformers' message dict): role, content ("" for an assistant's null, as vLLM
  // passes it), and when given tool_calls (arguments parsed to an object where they are JSON), tool_call_id, name,
  // reasoning_content.
  nlohmann::ordered_json message;
};

struct GenerationRequest {
  bool chat = false;
  std::string model;                     // empty = not given (accepted)
  std::vector<PromptInput> prompts;      // completions: >= 1
  std::vector<ChatMessage> messages;     // chat: >= 1
  std::optional<int64_t> max_tokens;     // max_tokens / max_completion_tokens (unset: 16, chat: rest of context)
  double temperature = 1.0;
  double top_p = 1.0;
  int32_t top_k = 0;                     // 0 or -1 = off
  double min_p = 0.0;                    // 0 = off
  std::vector<int64_t> stop_token_ids;   // end the choice like EOS (checked against the vocabulary later)
  bool include_stop_str_in_output = false;
  bool add_generation_prompt = true;     // chat: end the prompt where the assistant's reply starts
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  int32_t n = 1;
  int32_t logprobs = -1;                 // -1 = none; completions: logprobs k; chat: top_logprobs when logprobs
  bool stream = false;
  bool include_usage = false;            // stream_options.include_usage
  bool ignore_eos = false;
  bool speculative = true;  // false: no drafts for this request under --speculative-config (slimkv's field)
  int32_t min_tokens = 0;
  double presence_penalty = 0.0;         // [-2, 2]
  double frequency_penalty = 0.0;        // [-2, 2]
  double repetition_penalty = 1.0;       // > 0; 1 = off
  std::vector<std::pair<int64_t, double>> logit_bias;  // (token id as given, bias in [-100, 100]); ids checked later
  ToolRequest tools;                     // chat: tools, tool_choice, parallel_tool_calls, chat_template_kwargs
  StructuredOutput output;               // response_format / guided_*: what the text must match
};

// POST /tokenize (vLLM's shape): a prompt text, or chat messages rendered by the server's chat template.
struct TokenizeRequest {
  std::string model;                     // empty = not given
  bool chat = false;                     // messages given (else prompt)
  std::string prompt;
  std::vector<ChatMessage> messages;
  ToolRequest tools;                     // chat only: tools and chat_template_kwargs passed to the template
  bool add_generation_prompt = true;     // chat only
  bool add_special_tokens = true;        // the BOS (as generation adds it)
  bool return_token_strs = false;        // also each token's vocabulary text
};

// POST /detokenize (vLLM's shape): token ids to text.
struct DetokenizeRequest {
  std::string model;
  std::vector<int64_t> tokens;           // checked against the vocabulary later
};

// `limits`: the caps for JSON text held in the body's strings (a schema, a tool call's arguments), the body's own.
GenerationRequest parse_completion_request(const nlohmann::ordered_json& body, const JsonLimits& limits = JsonLimits{});
GenerationRequest parse_chat_request(const nlohmann::ordered_json& body, const JsonLimits& limits = JsonLimits{});
TokenizeRequest parse_tokenize_request(const nlohmann::ordered_json& body, const JsonLimits& limits = JsonLimits{});
DetokenizeRequest parse_detokenize_request(const nlohmann::ordered_json& body);

}  // namespace slimkv
