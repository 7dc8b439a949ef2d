#include "runner/generator.h"

#include <chrono>

namespace slimkv {

GenerateStats generate(const Model& model, ThreadPool* pool, std::span<const int32_t> prompt, const GenerateOptions& opts,
                       const std::function<bool(int32_t)>& on_token) {
  const ModelConfig& c = model.config;
  SLIMKV_CHECK(!prompt.empty(), "empty prompt (it must contain at least BOS)");
  SLIMKV_CHECK(static_cast<int64_t>(prompt.size()) <= c.max_seq_len,
               "the prompt has {} tokens but the model's context is {} tokens", prompt.size(), c.max_seq_len);
  SLIMKV_CHECK(opts.max_new_tokens >= 0, "-n must be >= 0 (got {})", opts.max_new_tokens);
  using clock = std::chrono::steady_clock;
  auto ms = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };

  int32_t capacity = std::min<int64_t>(c.max_seq_len, static_cast<int64_t>(prompt.size()) + opts.max_new_tokens);
  SequenceForward fwd(model, pool, capacity, 16, 256, opts.compression);
  std::vector<float> logits(c.vocab_size);
  Sampler sampler(opts.sampling);
  GenerateStats st;
  st.num_prompt_tokens = static_cast<int32_t>(prompt.size());
  if (opts.max_new_tokens == 0) return st;

  auto t0 = clock::now();
  fwd.forward(prompt, 0, false, logits.data());
  auto t1 = clock::now();
  st.prefill_ms = ms(t0, t1);
  int32_t pos = static_cast<int32_t>(prompt.size());
  for (;;) {
    int32_t next = sampler.sample(logits.data(), c.vocab_size);
    if (opts.stop_at_eos && model.tokenizer && next == model.tokenizer->eos_id()) break;
    ++st.num_generated_tokens;
    if (!on_token(next)) break;
    if (st.num_generated_tokens >= opts.max_new_tokens || pos >= capacity) break;
    int32_t tok[1] = {next};
    fwd.forward(tok, pos, false, logits.data());
    ++pos;
  }
  st.decode_ms = ms(t1, clock::now());
  return st;
}

}  // namespace slimkv
