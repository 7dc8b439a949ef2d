// Quality of a KV compression configuration against the full cache on the same token windows, tokenizer and greedy
// sampling (seed 5.1): KL divergence of next-token distributions, top-1 agreement, perplexity and its change,
// passkey accuracy, physical KV bytes per token, tokens/s. The baseline runs once; compression acts while each
// window advances (token by token through the engine's KV path, or in serving's prefill chunks). Used by `eval`
// and `tune`.
// Must not know: command lines or report formats.
#pragma once
#include <string>
#include <vector>

#include "compress/compression_config.h"
#include "core/thread_pool.h"
#include "model/model.h"

namespace slimkv {

struct PasskeyCase {          // one passkey prompt's outcome under one config
  std::string group;          // "<kind>@<context_tokens>" from the JSONL ("passkey" when it names no kind)
  std::string answer, got;    // expected digits, the first digits generated
  std::vector<int32_t> prompt_ids, out_ids;  // [prompt tokens incl. BOS], [<= 8 generated]
};

struct QualityResult {
  std::string name;
  int64_t kv_bytes_per_token = 0;  // physical, for a full window (sparse retention keeps fewer tokens)
  double ratio_vs_f16 = 0;         // kv_bytes_per_token / an f16 cache's
  double mean_kl = 0, p99_kl = 0, top1_agreement = 0, perplexity = 0, ppl_change = 0;
  int32_t passkey_right = 0, passkey_total = 0;
  std::vector<PasskeyCase> passkey_cases;  // in file order
  double tokens_per_s = 0;
  int64_t predictions = 0;
  // Attention's reads over the scored positions (every layer, per query token and KV head): the mean share of each
  // query's context read (sinks and window included; 1 without select mode), and the bytes read (records, the
  // residual window's, a select index's) against an f16 cache's full read of the same contexts.
  double read_fraction = 1, read_bytes_vs_f16 = 0;
  double passkey_read_fraction = 1;  // the same over the passkey answers' decode steps (the queries that retrieve)
};

class QualityEvaluator {
 public:
  // ids: the scored text's tokens; ctx: window length. passkey: JSONL path (may be empty).
  // block_size: KV block tokens (eviction granularity), as the engine's --block-size. prefill_chunk: 0 scores each
  // window token by token (compression acts from the first token, as in decode); N > 0 prefills each window in
  // chunks of N tokens as serving does (retention acts between chunks only where the config evicts in prefill).
  // Passkey prompts are always prefilled in chunks (N, or kPasskeyChunk), then answered greedily token by token.
  // score_from: only positions >= N of each window are scored (KL, top-1, perplexity, reads; with prefill chunks
  // the reads are the whole window's).
  QualityEvaluator(const Model& model, ThreadPool* pool, std::vector<int32_t> ids, int32_t ctx,
                   std::string passkey = "", int32_t max_passkey = 30, int32_t block_size = 16,
                   int32_t prefill_chunk = 0, int32_t score_from = 0);
  static constexpr int32_t kPasskeyChunk = 512;  // the server's default --max-num-batched-tokens
  const QualityResult& baseline() const { return baseline_; }
  size_t num_windows() const { return windows_.size(); }
  int32_t ctx() const { return ctx_; }
  QualityResult evaluate(const std::string& name, const CompressionConfig& cc);

 private:
  QualityResult run(const std::string& name, const CompressionConfig& cc, bool is_baseline);
  void run_passkey(const CompressionConfig& cc, QualityResult& r);

  const Model& model_;
  ThreadPool* pool_;
  int32_t ctx_;
  std::vector<std::vector<int32_t>> windows_;
  std::vector<std::vector<float>> base_logits_;  // [window][pos * vocab]
  std::string passkey_;
  int32_t max_passkey_;
  int32_t block_size_;
  int32_t prefill_chunk_;
  int32_t score_from_;
  QualityResult baseline_;
};

}  // namespace slimkv
