#include "server/tokenize_endpoints.h"

#include <fmt/format.h>

#include "server/api_error.h"

namespace slimkv {

nlohmann::json tokenize_json(const ServeContext& ctx, const TokenizeRequest& req) {
  const Tokenizer& tok = *ctx.model->tokenizer;
  const std::vector<int32_t> ids =
      req.chat ? encode_prompt_text(ctx, render_chat_prompt(ctx.chat_template, req.messages, req.add_generation_prompt, req.tools),
                                    "messages", req.add_special_tokens)
               : encode_prompt_text(ctx, req.prompt, "prompt", req.add_special_tokens);
  nlohmann::json strs = nullptr;
  if (req.return_token_strs) {
    strs = nlohmann::json::array();
    for (int32_t id : ids) strs.push_back(tok.token_text(id));
  }
  return {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", ctx.max_model_len}, {"token_strs", strs}};
}

nlohmann::json detokenize_json(const ServeContext& ctx, const DetokenizeRequest& req) {
  const int32_t vocab = ctx.model->config.vocab_size;
  std::vector<int32_t> ids;
  ids.reserve(req.tokens.size());
  for (int64_t t : req.tokens) {
    if (t < 0 || t >= vocab) {
      throw invalid_request(fmt::format("token id {} is outside the vocabulary (0..{})", t, vocab - 1), "tokens");
    }
    ids.push_back(static_cast<int32_t>(t));
  }
  return {{"prompt", ctx.model->tokenizer->decode(ids, DecodeOptions{/*skip_special=*/false})}};  // HF decode()
}

}  // namespace slimkv
