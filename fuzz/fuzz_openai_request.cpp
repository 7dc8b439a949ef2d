// Fuzz target: an HTTP request body through the OpenAI request parsers (and Anthropic's Messages and OpenAI's
// Responses bodies rewritten as chat bodies, and /v1/embeddings' body), then chat rendering for every template and stop-string matching over the parsed stop strings. Only
// ApiError may come out.
#include <string_view>
#include <vector>

#include "byte_tokenizer.h"
#include "server/anthropic_request.h"
#include "server/api_error.h"
#include "server/response_store.h"
#include "server/responses_request.h"
#include "server/chat_template.h"
#include "server/embeddings_request.h"
#include "server/completion_text.h"
#include "server/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto body = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;
  static slimkv::ResponseStore store(4, 3600);
  try {
    slimkv::parse_embeddings_request(body);  // /v1/embeddings' body
  } catch (const slimkv::ApiError&) {
  }
  for (int api = 0; api < 4; ++api) {  // completions, chat, messages, responses
    const bool chat = api > 0;
    try {
      auto r = api == 0   ? slimkv::parse_completion_request(body)
               : api == 1 ? slimkv::parse_chat_request(body)
               : api == 2 ? slimkv::parse_chat_request(slimkv::messages_to_chat_body(body))
                          : slimkv::parse_chat_request(slimkv::responses_to_chat_body(body, store).chat_body);
      static const std::vector<slimkv::ChatTemplate> templates = [] {
        std::vector<slimkv::ChatTemplate> v;
        for (const char* n : {"plain", "deepseek-v4", "chatml", "llama2", "llama3", "gemma", "phi3", "mistral"}) {
          v.push_back(slimkv::ChatTemplate::resolve(n));
        }
        return v;
      }();
      for (const auto& t : templates) {
        // the built-in templates raise nothing: only ApiError may come out (tools and kwargs included)
        if (chat) t.render(r.messages, true, r.tools.tools, r.tools.template_kwargs);
      }
      slimkv::fuzz::ByteTokenizer tok;
      slimkv::CompletionText out(tok, -1, r.stop);
      for (size_t i = 0; i < size && i < 256; ++i) out.push(data[i]);
      out.finish();
    } catch (const slimkv::ApiError&) {
    }
  }
  return 0;
}
