// One OpenAI generation request from admission to its last byte: tokenizes the prompts (or renders the chat),
// checks them against the context, submits one engine request per choice, turns engine events into text
// (stop strings, UTF-8-safe deltas, logprobs) and produces either the whole response or its SSE events.
// Must not know: sockets or httplib (the HTTP layer pumps next_events into the connection).
#pragma once
#include <functional>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "model/model.h"
#include "server/chat_template.h"
#include "server/chat_reply_builder.h"
#include "server/output_constraint.h"
#include "server/completion_text.h"
#include "server/engine_service.h"
#include "server/lora_registry.h"
#include "server/openai_request.h"
#include "server/openai_response.h"

namespace slimkv {

struct ServeContext {                  // what every session needs from the server
  const Model* model = nullptr;
  EngineService* service = nullptr;
  ChatTemplate chat_template;          // parsed once at start-up
  std::string model_name;
  int32_t max_model_len = 0;
  double request_timeout_s = 600;
  int64_t max_request_cost = 262144;   // --max-request-cost: choices x max_tokens x (1 + logprobs)
  std::shared_ptr<const OutputConstraints> constraints;  // structured output over the model's vocabulary (null: none)
  ChatFormat chat_format;              // the template's tool-call / reasoning syntax (detect_chat_format)
  Pooling pooling = Pooling::None;     // /v1/embeddings: --pooling, else the model's; None refuses the route
  std::shared_ptr<LoraRegistry> loras; // the adapters a request's `model` may name (null: none)
};

// The chat prompt rendered by the server's template; a template that refuses the messages is ApiError 400
// (param `messages`) with its own rule, any other render error a 400 saying so.
std::string render_chat_prompt(const ChatTemplate& t, const std::vector<ChatMessage>& messages,
                               bool add_generation_prompt, const ToolRequest& tools);
// A prompt text's token ids as generation tokenizes it (add_special: the BOS); a text far longer than the context
// could hold is ApiError 400 (param `field`) before it is tokenized.
std::vector<int32_t> encode_prompt_text(const ServeContext& ctx, const std::string& text, const char* field,
                                        bool add_special = true);

class GenerationSession {
 public:
  // Validates and submits; throws ApiError (400 context/vocabulary/parameters, 429 queue full).
  // lora: the adapter the request's `model` named (null: the base model).
  GenerationSession(const ServeContext& ctx, GenerationRequest req, std::shared_ptr<const LoraAdapter> lora = nullptr);
  ~GenerationSession();                // cancels whatever has not finished (client gone, error)

  // Non-streaming: waits for every choice and returns the response's JSON text (written from the choices' records,
  // never built as one tree: response_text.h); ApiError 504 (after cancelling) past --request-timeout.
  // client_gone (may be empty): polled between waits; true = the client hung up, so the job is cancelled (its KV
  // blocks freed) and ApiError 499 is thrown (nobody is there to read it).
  std::string run_to_completion(const std::function<bool()>& client_gone = {});
  // Streaming: the SSE bytes that are ready, waiting up to wait_ms for some; done() after "data: [DONE]".
  std::string next_events(int wait_ms);
  bool done() const { return done_; }
  bool streaming() const { return req_.stream; }
  void cancel();

 private:
  struct Choice {
    int32_t prompt_index = 0;
    std::unique_ptr<CompletionText> text;
    int32_t prev_token = -1;           // for logprob token texts
    int32_t num_tokens = 0;            // output tokens consumed (= usage.completion_tokens share)
    std::string finish_reason;         // empty while running
    bool role_sent = false;
    int32_t num_prompt_tokens = 0, num_cached_tokens = 0;
    std::vector<TokenLogprobEntry> logprobs;
    int64_t text_offset = 0;           // bytes of text released so far
    std::unique_ptr<ChatReplyBuilder> reply;  // chat with tools / reasoning / a forced tool call; null: plain text
  };
  std::string finish_reason_of(const Choice& c) const;  // "tool_calls" when the reply called tools and stopped
  std::string stream_chat_deltas(Choice& c, int32_t index, const std::string& delta, nlohmann::json lp);
  // Applies one engine event; returns the text it releases. Sets the finish reason when the choice ends.
  std::string apply(Choice& c, const ChoiceEvent& e, std::vector<TokenLogprobEntry>* new_logprobs);
  Usage usage() const;
  bool all_finished() const;

  const ServeContext& ctx_;
  GenerationRequest req_;
  ReplyMode reply_mode_;
  ResponseHeader header_;
  std::vector<Choice> choices_;
  std::shared_ptr<Job> job_;
  bool done_ = false;
  bool usage_sent_ = false;
};

}  // namespace slimkv
