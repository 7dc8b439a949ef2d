// Speculative decoding's MTP heads (issue SD, `"method": "mtp"`): the target's own multi-token-prediction head
// (model/mtp_head.h) drafts each speculating request's next k tokens. After every step the engine hands it each
// request's new final-normed hidden states and the token after each (observe); a proposal runs the head over the rows
// it has not seen — one forward for every request, whose last row gives the first draft — then k - 1 steps that feed
// the head its own hidden state and last draft. Its cache is the head's one layer: a lane per running request, paged by
// position from the first position the lane saw (RoPE positions relative to it: a prefix-cache hit, or a lane restarted
// for room, starts later), its blocks taken from a pool of its own as the lane grows (as many tokens as the target's
// pool holds, at least one full sequence); a lane that finds no room starts again at its unseen rows. A rejected
// draft's rows are rewritten when accepted tokens reach them. Owns: the head's model, forward and cache. Must not know:
// the scheduler or the target's cache.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/thread_pool.h"
#include "kv/kv_cache_manager.h"
#include "kv/kv_storage.h"
#include "model/decoder_forward.h"
#include "model/forward_batch.h"
#include "sched/sched_output.h"

namespace slimkv {

class MtpProposer {
 public:
  // The target's head 0 (Error naming the file when it has none); a pool of pool_tokens (at least max_model_len).
  MtpProposer(const Model& target, int32_t max_model_len, int32_t block_size, int64_t pool_tokens, ThreadPool* pool);
  ~MtpProposer();
  MtpProposer(const MtpProposer&) = delete;
  MtpProposer& operator=(const MtpProposer&) = delete;

  // Request id's target hidden states at positions [first_pos, first_pos + n) (hidden: [n, dim], after the final
  // norm) and the token at each position + 1 (next). They replace whatever the lane held from first_pos on (a
  // verify chunk's rejected rows, a recompute after preemption); a gap starts the lane afresh at first_pos.
  void observe(RequestId id, int32_t first_pos, const float* hidden, std::span<const int32_t> next);
  // drafts[i]: up to ks[i] greedy tokens after ids[i]'s token at last_pos[i] — empty unless the lane's latest
  // observed row is last_pos[i] - 1 (its next token the request's last). One batched head step per draft.
  std::vector<std::vector<int32_t>> propose(const std::vector<RequestId>& ids, const std::vector<int32_t>& last_pos,
                                            const std::vector<int32_t>& ks);
  // Frees every lane whose request is not in `running` (finished, aborted or preempted).
  void retain(std::span<const RequestId> running);
  int64_t head_steps() const { return head_steps_; }  // head forwards so far
  int64_t cache_bytes() const { return kv_.size_bytes(); }
  int32_t free_blocks() const { return static_cast<int32_t>(free_blocks_.size()); }

 private:
  struct Lane {
    GroupKv table;          // its blocks, from free_blocks_ as it grows
    int32_t start_pos = 0;  // the position its slot 0 holds
    int32_t fed_end = 0;    // positions [start_pos, fed_end) are in its cache
    std::vector<float> hidden;  // [pending, dim] observed rows from fed_end on, not yet run
    std::vector<int32_t> next;  // [pending] the token after each
    int32_t end() const { return fed_end + static_cast<int32_t>(next.size()); }
  };
  struct Row {  // one lane's rows in a head forward
    Lane* lane;
    int32_t rel;  // its first row's position in the lane
    std::span<const int32_t> tokens;
    const float* hidden;  // [tokens.size(), dim]
  };
  // One head forward over rows (lanes in order); logits and final-normed hidden states of each one's last row when
  // `last_rows` (into logits_ [rows, vocab], fwd_.hidden_states()).
  void run(const std::vector<Row>& rows, bool last_rows);
  void flush(Lane& lane, int32_t keep);  // runs the lane's pending rows but its last `keep`
  // Blocks for the lane's positions up to end_pos (exclusive); without room it starts again at its unseen rows
  // (fed_end), and false if even that does not fit.
  bool make_room(Lane& lane, int32_t end_pos);
  void restart(Lane& lane, int32_t pos);  // lets its blocks go; it starts at pos, nothing pending kept

  std::unique_ptr<Model> head_;
  DecoderForward fwd_;
  int32_t block_size_;
  KvLayout layout_;
  KvStorage kv_;
  std::vector<int32_t> free_blocks_;
  std::unordered_map<RequestId, Lane> lanes_;
  ForwardBatch batch_;
  std::vector<float> logits_;    // [rows, vocab] the last run's
  std::vector<float> g_, in_;    // propose: [drafting rows, dim] the head's latest hidden states, a step's input
  int64_t head_steps_ = 0;
};

}  // namespace slimkv
