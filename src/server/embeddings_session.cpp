#include "server/embeddings_session.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "server/api_error.h"

namespace slimkv {
namespace {

// The inputs' token ids, each within the vocabulary and leaving the one position the engine request samples.
std::vector<std::vector<int32_t>> input_ids(const ServeContext& ctx, const EmbeddingsRequest& req) {
  const int32_t vocab = ctx.model->config.vocab_size;
  std::vector<std::vector<int32_t>> out;
  for (const PromptInput& in : req.inputs) {
    std::vector<int32_t> ids;
    if (!in.is_ids) {
      ids = encode_prompt_text(ctx, in.text, "input", true);
    } else {
      for (int64_t t : in.ids) {
        if (t < 0 || t >= vocab) {
          throw invalid_request(fmt::format("token id {} is outside the vocabulary (0..{})", t, vocab - 1), "input");
        }
        ids.push_back(static_cast<int32_t>(t));
      }
    }
    if (static_cast<int64_t>(ids.size()) >= ctx.max_model_len) {
      throw invalid_request(fmt::format("This model's maximum context length is {} tokens; input {} has {} tokens "
                                        "(at most {} can be embedded).", ctx.max_model_len, out.size(), ids.size(),
                                        ctx.max_model_len - 1),
                            "input");
    }
    out.push_back(std::move(ids));
  }
  return out;
}

// Cancels the job's unfinished requests when the session ends early (error, client gone, timeout).
struct CancelUnfinished {
  EngineService& service;
  std::shared_ptr<Job> job;
  ~CancelUnfinished() {
    if (job && !job->finished()) service.cancel(*job);
  }
};

}  // namespace

void l2_normalize(std::vector<float>& v) {
  double sum = 0.0;
  for (float x : v) sum += static_cast<double>(x) * x;
  if (sum <= 0.0) return;
  const float inv = static_cast<float>(1.0 / std::sqrt(sum));
  for (float& x : v) x *= inv;
}

std::string base64_floats(const std::vector<float>& v) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // x86 and every target here: little-endian
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t w = static_cast<uint8_t>(bytes[i]) << 16;
    if (n > 1) w |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (n > 2) w |= static_cast<uint8_t>(bytes[i + 2]);
    for (size_t k = 0; k < 4; ++k) out.push_back(k <= n ? kAlphabet[(w >> (18 - 6 * k)) & 63] : '=');
  }
  return out;
}

std::string run_embeddings(const ServeContext& ctx, const EmbeddingsRequest& req,
                           const std::function<bool()>& client_gone, std::shared_ptr<const LoraAdapter> lora) {
  if (ctx.pooling == Pooling::None) {
    throw invalid_request("this model has no pooling configured (its file has no pooling_type): start the server "
                          "with --pooling mean|cls|last to serve /v1/embeddings", "model");
  }
  const int32_t dim = ctx.model->config.dim;
  if (req.dimensions && *req.dimensions != dim) {
    throw invalid_request(fmt::format("'dimensions' must be this model's width, {} (got {}; shortened embeddings "
                                      "are not supported)", dim, *req.dimensions), "dimensions");
  }
  JobSpec spec;
  int64_t prompt_tokens = 0;
  for (auto& ids : input_ids(ctx, req)) {
    RequestParams p;  // one greedy token, not reported: the request ends once its prompt is pooled
    p.max_tokens = 1;
    p.pooling = ctx.pooling;
    p.lora = lora;
    prompt_tokens += static_cast<int64_t>(ids.size());
    spec.prompts.push_back(std::move(ids));
    spec.params.push_back(p);
  }
  auto submitted = ctx.service->submit(std::move(spec));
  if (auto* refusal = std::get_if<Refusal>(&submitted)) {
    if (refusal->queue_full) throw server_overloaded(refusal->message);
    throw invalid_request(refusal->message, "input");
  }
  CancelUnfinished guard{*ctx.service, std::get<std::shared_ptr<Job>>(submitted)};
  Job& job = *guard.job;
  std::vector<std::vector<float>> vectors(job.num_choices());  // [inputs][dim]
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(ctx.request_timeout_s * 1000));
  while (!job.drained()) {
    const auto tick = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
    auto events = job.wait(tick);
    if (client_gone && client_gone()) throw ApiError(499, "the client closed the connection", "cancelled");
    if (events.empty() && std::chrono::steady_clock::now() >= deadline) {
      throw ApiError(504, fmt::format("the request did not finish within --request-timeout {} s",
                                      ctx.request_timeout_s), "timeout");
    }
    for (auto& e : events) {
      if (e.finish == FinishReason::Abort) throw service_unavailable("the embedding was ended before it was computed");
      if (e.finish != FinishReason::None) vectors[e.choice] = std::move(e.embedding);
    }
  }
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    SLIMKV_CHECK(static_cast<int32_t>(vectors[i].size()) == dim, "embeddings: input {} pooled {} values for {}", i,
                 vectors[i].size(), dim);
    l2_normalize(vectors[i]);
    nlohmann::ordered_json item = {{"object", "embedding"}, {"index", i}};
    if (req.base64) item["embedding"] = base64_floats(vectors[i]);
    else item["embedding"] = vectors[i];
    data.push_back(std::move(item));
  }
  const std::string model = lora ? lora->name : ctx.model_name;  // the answer names what served it
  const nlohmann::ordered_json body = {{"object", "list"}, {"data", std::move(data)}, {"model", model},
                                       {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
  return body.dump();
}

}  // namespace slimkv
