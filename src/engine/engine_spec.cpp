// Engine's speculative decoding (issue SD): before a step, each running request that may speculate gets its drafts
// (sampling/ngram_proposer.h or engine/draft_proposer.h) as a verify chunk — the scheduler schedules the last token
// and the drafts together; after the forward, the chunk's rows are verified (sampling/speculative_verify.h) into the
// accepted drafts and the token after them — sampled row by row by the request's own sampler, so greedy or sampled
// (temperature, top-k, top-p, min-p), the tokens are plain decoding's exactly, draw for draw. Only layouts of
// full-attention and window groups speculate (tables paged by position: a rejected draft's rows are simply
// rewritten, and windows free by the accepted count), of compressed streams (entries and their state written by
// position, likewise) and of recurrent states (a verify chunk keeps the state after each row in a spare block; the
// accepted row's becomes the live state); dynamic retention, and tensor parallelism, decode as before.
#include <algorithm>

#include "core/check.h"
#include "engine/engine.h"
#include "sampling/speculative_verify.h"

namespace slimkv {

std::string speculation_refusal(const KvLayout& layout, int32_t ranks) {
  if (ranks > 1) return "not under tensor parallelism yet";
  for (const KvGroup& g : layout.groups) {  // windows free only what no query from the accepted position sees
    const KvGroupKind k = g.spec.kind;
    if (k == KvGroupKind::DynamicTopK) {
      return fmt::format("a KV group of kind {} (dynamic retention does not roll back a rejected draft's "
                         "importance yet)", g.spec.describe());
    }
  }
  return "";
}

void Engine::plan_drafts() {
  if (!spec_.on() || !spec_ok_) return;
  const bool now = !spec_.adaptive || spec_governor_.speculate_now();
  std::vector<Request*> who;  // requests that draft this step, and how many tokens each may
  std::vector<int32_t> ks;
  for (Request* r : scheduler_.running()) {
    r->spec_tokens.clear();
    if (!now || !may_speculate(*r)) continue;
    // every emitted token counts against max_tokens and the context: k drafts emit up to k + 1
    const int32_t room = std::min(r->params.max_tokens - r->num_output_tokens(),
                                  cfg_.sched.max_model_len - r->num_tokens()) - 1;
    if (room <= 0) continue;
    who.push_back(r);
    ks.push_back(std::min(spec_.ngram.num_speculative_tokens, room));
  }
  std::vector<std::vector<int32_t>> drafts(who.size());
  if (draft_) {  // one batched draft step per token for all of them
    std::vector<std::span<const int32_t>> seqs;
    for (Request* r : who) seqs.emplace_back(r->tokens);
    drafts = draft_->propose(seqs, ks);
  } else {
    for (size_t i = 0; i < who.size(); ++i) {
      NgramProposerConfig c = spec_.ngram;
      c.num_speculative_tokens = ks[i];
      drafts[i] = propose_ngram(who[i]->tokens, c);
    }
  }
  for (size_t i = 0; i < who.size(); ++i) {
    if (drafts[i].empty()) continue;
    Request* r = who[i];
    r->spec_tokens.reserve(drafts[i].size() + 1);
    r->spec_tokens.push_back(r->tokens.back());
    r->spec_tokens.insert(r->spec_tokens.end(), drafts[i].begin(), drafts[i].end());
  }
}

void Engine::verify_chunk(const ScheduledChunk& c, const float* rows, std::vector<int32_t>& sampled,
                          std::vector<int32_t>& accepted) {
  ProfScope ps(ProfKind::SpecVerify, ProfKind::Sampling);  // called inside the step's sampling scope
  const int32_t vocab = model_.config.vocab_size;
  const std::span<const int32_t> drafts = c.token_ids.subspan(1);
  Request* r = scheduler_.find(c.id);
  const SpecVerdict v = verify_drafts(drafts, std::span<const float>(rows, (drafts.size() + 1) * vocab), vocab,
                                      r->sampler);  // plain decoding's draws, row by row
  sampled.insert(sampled.end(), drafts.begin(), drafts.begin() + v.num_accepted);
  sampled.push_back(v.next_token);
  accepted.push_back(v.num_accepted);
  metrics_.spec_drafts += 1;
  metrics_.spec_draft_tokens += static_cast<int64_t>(drafts.size());
  metrics_.spec_accepted_tokens += v.num_accepted;
  for (int32_t i = 0; i < v.num_accepted && i < static_cast<int32_t>(metrics_.spec_accepted_per_pos.size()); ++i) {
    ++metrics_.spec_accepted_per_pos[i];
  }
}

}  // namespace slimkv
