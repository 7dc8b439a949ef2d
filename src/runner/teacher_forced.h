// One sequence fed token by token (or in prefill chunks) through the engine's KV path (blocks from a KvCacheManager, compression,
// sparse retention with eviction), returning each position's logits: what `eval` scores, so compression acts
// while the window advances exactly as in decode. Must not know: requests, sampling or the scheduler's policy.
#pragma once
#include <span>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "model/decoder_forward.h"

namespace slimkv {

class TeacherForcedRun {
 public:
  TeacherForcedRun(const Model& model, ThreadPool* pool, const CompressionConfig& cc, int32_t capacity_tokens,
                   int32_t block_size = 16);
  // Appends `token` at the next position and writes its logits [vocab].
  void step(int32_t token, float* logits);
  // Appends `prompt` at the next positions in chunks of chunk_tokens, as serving's chunked prefill runs it: each
  // chunk's attention feeds retention, blocks are cached, and retention acts after each chunk (evicting only once
  // the prompt is computed unless the config evicts in prefill). logits: [prompt.size(), vocab] with all_logits,
  // else [vocab] of the last token.
  void prefill(std::span<const int32_t> prompt, int32_t chunk_tokens, bool all_logits, float* logits);
  int32_t num_tokens() const { return static_cast<int32_t>(tokens_.size()); }
  int32_t live_blocks() const { return mgr_.num_used_blocks(); }
  int64_t kv_bytes_per_token() const { return layout_.bytes_per_token(); }
  // What attention has read so far (rows, bytes against an f16 cache's; select mode's read fraction).
  const PagedAttention::ReadStats& read_stats() const { return fwd_.read_stats(); }

 private:
  void run_chunk(int32_t from, int32_t len, int32_t num_prompt, bool all_logits, float* dst);
  DecoderForward fwd_;
  CompressionConfig cc_;
  int32_t block_size_;
  KvLayout layout_;
  KvStorage kv_;
  KvCacheManager mgr_;
  SeqKv seq_;
  std::vector<int32_t> tokens_;
  ForwardBatch batch_;
};

}  // namespace slimkv
