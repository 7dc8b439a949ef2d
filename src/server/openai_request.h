// Parses and validates the body of POST /v1/completions and /v1/chat/completions into plain data.
// Every wrong type, out-of-range number or empty prompt is an ApiError (400) naming the field.
// Must not know: the tokenizer, the engine or HTTP (the prompt stays text or ids here).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace slimkv {

struct PromptInput {               // one prompt: text to tokenize, or token ids given by the client
  std::string text;
  std::vector<int64_t> ids;        // int64 so that out-of-vocabulary ids can be reported as given
  bool is_ids = false;
};

struct ChatMessage {
  std::string role;                // system | user | assistant | tool | developer
  std::string content;
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
  int32_t min_tokens = 0;
};

GenerationRequest parse_completion_request(const nlohmann::json& body);
GenerationRequest parse_chat_request(const nlohmann::json& body);

}  // namespace slimkv
