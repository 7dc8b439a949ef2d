#include "engine/mtp_proposer.h"

#include <algorithm>

#include "core/check.h"
#include "model/mtp_head.h"
#include "runner/batch_builder.h"
#include "sampling/sampler.h"

namespace slimkv {
namespace {

constexpr int32_t kMaxPendingRows = 256;  // a lane runs what it holds past this (memory stays a chunk's)

// The head's one-group, one-pool layout (checked), and its pool's blocks.
int32_t head_pool_blocks(const KvLayout& layout, int64_t tokens, int32_t block_size) {
  SLIMKV_CHECK(layout.num_groups() == 1 && layout.num_pools() == 1 && !layout.groups[0].spec.recurrent_state(),
               "--speculative-config: the MTP head's layer needs {} KV groups; one paged attention group is supported",
               layout.num_groups());
  const int64_t blocks = (tokens + block_size - 1) / block_size;
  SLIMKV_CHECK(blocks > 0 && blocks < (int64_t{1} << 30), "--speculative-config: an MTP head pool of {} tokens",
               tokens);
  return static_cast<int32_t>(blocks);
}

}  // namespace

MtpProposer::MtpProposer(const Model& target, int32_t max_model_len, int32_t block_size, int64_t pool_tokens,
                         ThreadPool* pool)
    : head_(mtp_head_model(target, 0)), fwd_(*head_, pool), block_size_(block_size),
      layout_(fwd_.kv_layout(block_size)),
      kv_(layout_, head_pool_blocks(layout_, std::max<int64_t>(pool_tokens, max_model_len), block_size)) {
  for (int32_t b = kv_.num_blocks() - 1; b >= 0; --b) free_blocks_.push_back(b);
}

MtpProposer::~MtpProposer() = default;

void MtpProposer::restart(Lane& L, int32_t pos) {
  free_blocks_.insert(free_blocks_.end(), L.table.blocks.rbegin(), L.table.blocks.rend());
  L.table.blocks.clear();
  L.start_pos = L.fed_end = pos;
  L.next.clear();
  L.hidden.clear();
}

bool MtpProposer::make_room(Lane& L, int32_t end_pos) {
  auto grow = [&] {
    const size_t need = static_cast<size_t>((end_pos - L.start_pos + block_size_ - 1) / block_size_);
    while (L.table.blocks.size() < need) {
      if (free_blocks_.empty()) return false;
      L.table.blocks.push_back(free_blocks_.back());
      free_blocks_.pop_back();
    }
    return true;
  };
  if (grow()) return true;
  std::vector<float> hidden;  // start again at the unseen rows, keeping them
  std::vector<int32_t> next;
  hidden.swap(L.hidden);
  next.swap(L.next);
  restart(L, L.fed_end);
  L.hidden.swap(hidden);
  L.next.swap(next);
  return grow();
}

void MtpProposer::observe(RequestId id, int32_t first_pos, const float* hidden, std::span<const int32_t> next) {
  const int32_t n = static_cast<int32_t>(next.size()), dim = head_->config.dim;
  auto [it, fresh] = lanes_.try_emplace(id);
  Lane& L = it->second;
  if (fresh || first_pos < L.start_pos || first_pos > L.end()) {  // new, or a gap: start afresh here
    restart(L, first_pos);
  } else if (first_pos < L.fed_end) {  // rows it ran are replaced (rejected drafts' positions, a recompute)
    L.fed_end = first_pos;
    L.next.clear();
    L.hidden.clear();
  } else {  // keep the pending rows before first_pos
    L.next.resize(first_pos - L.fed_end);
    L.hidden.resize(L.next.size() * dim);
  }
  L.next.insert(L.next.end(), next.begin(), next.end());
  L.hidden.insert(L.hidden.end(), hidden, hidden + static_cast<size_t>(n) * dim);
  if (static_cast<int32_t>(L.next.size()) > kMaxPendingRows) flush(L, 1);
}

void MtpProposer::flush(Lane& L, int32_t keep) {
  const int32_t rows = static_cast<int32_t>(L.next.size()) - keep, dim = head_->config.dim;
  if (rows <= 0) return;
  if (make_room(L, L.fed_end + rows)) {
    run({Row{&L, L.fed_end - L.start_pos, std::span<const int32_t>(L.next).first(rows), L.hidden.data()}}, false);
  }  // else the head never sees these rows: the lane starts after them
  L.next.erase(L.next.begin(), L.next.begin() + rows);
  L.hidden.erase(L.hidden.begin(), L.hidden.begin() + static_cast<size_t>(rows) * dim);
  L.fed_end += rows;
  if (L.table.blocks.empty()) L.start_pos = L.fed_end;
}

void MtpProposer::run(const std::vector<Row>& rows, bool last_rows) {
  const int32_t dim = head_->config.dim, vocab = head_->config.vocab_size;
  SchedOutput out;
  for (const Row& r : rows) {
    ScheduledChunk c;
    c.start_pos = r.rel;
    c.token_ids = r.tokens;
    c.groups = std::span<const GroupKv>(&r.lane->table, 1);
    out.chunks.push_back(c);
  }
  build_forward_batch(out, block_size_, layout_.groups, batch_);
  batch_.logits_rows.clear();
  int32_t t = 0;
  for (const Row& r : rows) {
    const int32_t n = static_cast<int32_t>(r.tokens.size());
    batch_.input_hidden.insert(batch_.input_hidden.end(), r.hidden, r.hidden + static_cast<size_t>(n) * dim);
    t += n;
    if (last_rows) {
      batch_.logits_rows.push_back(t - 1);
      batch_.hidden_rows.push_back(t - 1);
    }
  }
  logits_.resize(batch_.logits_rows.size() * static_cast<size_t>(vocab));
  fwd_.forward(batch_, kv_, logits_.data());
  ++head_steps_;
}

std::vector<std::vector<int32_t>> MtpProposer::propose(const std::vector<RequestId>& ids,
                                                       const std::vector<int32_t>& last_pos,
                                                       const std::vector<int32_t>& ks) {
  const int32_t dim = head_->config.dim, vocab = head_->config.vocab_size;
  std::vector<std::vector<int32_t>> drafts(ids.size());
  std::vector<size_t> who;  // ids' indices that draft, in row order
  std::vector<Row> rows;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = lanes_.find(ids[i]);
    if (ks[i] <= 0 || it == lanes_.end() || it->second.next.empty() || it->second.end() != last_pos[i]) continue;
    Lane& L = it->second;
    if (!make_room(L, L.end() + ks[i] - 1)) continue;  // its rows and the drafts' (positions end .. end + k - 2)
    who.push_back(i);
    rows.push_back(Row{&L, L.fed_end - L.start_pos, L.next, L.hidden.data()});
  }
  if (rows.empty()) return drafts;
  run(rows, true);  // every lane's unseen rows; the last one's logits are the first draft
  std::vector<float>& g = g_;  // [rows, dim] the head's hidden state after each one's latest row
  g.assign(fwd_.hidden_states().begin(), fwd_.hidden_states().end());
  std::vector<int32_t> last(rows.size());  // [rows] each one's latest draft
  for (size_t j = 0; j < rows.size(); ++j) {
    Lane& L = *rows[j].lane;
    L.fed_end = L.end();
    L.next.clear();
    L.hidden.clear();
    last[j] = argmax(logits_.data() + j * static_cast<size_t>(vocab), vocab);
    drafts[who[j]].push_back(last[j]);
  }
  std::vector<size_t> act;  // rows still drafting
  std::vector<Row> step;
  std::vector<float>& in = in_;  // [act, dim] their hidden states
  for (int32_t s = 1;; ++s) {  // draft s + 1 from (the head's own hidden state, draft s) at position end - 1 + s
    act.clear();
    step.clear();
    in.clear();
    for (size_t j = 0; j < rows.size(); ++j) {
      if (ks[who[j]] <= s) continue;
      Lane& L = *rows[j].lane;
      act.push_back(j);
      in.insert(in.end(), g.begin() + j * dim, g.begin() + (j + 1) * dim);
      step.push_back(Row{&L, L.fed_end - 1 + s - L.start_pos, std::span<const int32_t>(&last[j], 1), nullptr});
    }
    if (act.empty()) break;
    for (size_t a = 0; a < step.size(); ++a) step[a].hidden = in.data() + a * dim;
    run(step, true);
    for (size_t a = 0; a < act.size(); ++a) {
      const size_t j = act[a];
      std::copy_n(fwd_.hidden_states().begin() + a * dim, dim, g.begin() + j * dim);
      last[j] = argmax(logits_.data() + a * static_cast<size_t>(vocab), vocab);
      drafts[who[j]].push_back(last[j]);
    }
  }
  return drafts;
}

void MtpProposer::retain(std::span<const RequestId> running) {
  for (auto it = lanes_.begin(); it != lanes_.end();) {
    if (std::find(running.begin(), running.end(), it->first) != running.end()) {
      ++it;
      continue;
    }
    restart(it->second, 0);  // its blocks back to the pool
    it = lanes_.erase(it);
  }
}

}  // namespace slimkv
