// Speculative decoding's draft model (issue SD, `"method": "draft_model"`): a second, smaller model with the
// target's vocabulary proposes each speculating request's next k tokens greedily. It runs in an engine of its own
// (its own paged KV pool, one thread, prefix caching on): each proposal is a short request whose prompt is the
// target request's tokens — the blocks the last proposal computed are prefix hits, so only the tail past the last
// full block and the k new tokens are computed — finished and let go at once, so a rejected draft leaves nothing to
// roll back. Owns: the draft model and its engine. Must not know: the target's cache or scheduler.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace slimkv {

struct Model;
struct EngineConfig;
class Engine;

class DraftProposer {
 public:
  // Loads the draft at path; refuses (Error naming both) a vocabulary other than the target's.
  // Its engine takes the target's block size, context (or the draft's, if shorter), sequences and tokens a step.
  // With an explicit --kv-cache-memory the draft's pool takes the share of it that holds as many tokens as the
  // target's (its bytes per token over both models'; target_bytes_per_token: the target's layout's), and the
  // target keeps the rest (kv_cache_memory_gib()); otherwise its pool is capped like the target's (at most
  // max_num_seqs full sequences).
  DraftProposer(const std::string& path, const Model& target, const EngineConfig& target_cfg,
                int64_t target_bytes_per_token);
  ~DraftProposer();
  DraftProposer(const DraftProposer&) = delete;
  DraftProposer& operator=(const DraftProposer&) = delete;

  // drafts[i]: up to ks[i] greedy tokens of the draft model after seqs[i] (empty when seqs[i] + ks[i] passes the
  // draft's context). All sequences advance together, one batched draft step per token.
  std::vector<std::vector<int32_t>> propose(const std::vector<std::span<const int32_t>>& seqs,
                                            const std::vector<int32_t>& ks);
  int64_t steps() const { return steps_; }  // draft engine steps so far
  double kv_cache_memory_gib() const { return kv_gib_; }  // the draft pool's share of --kv-cache-memory (0: none)

 private:
  std::unique_ptr<Model> model_;
  std::unique_ptr<Engine> engine_;
  int32_t max_model_len_ = 0;
  int64_t steps_ = 0;
  double kv_gib_ = 0;
};

}  // namespace slimkv
