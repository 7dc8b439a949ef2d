#include "kv/kv_group_table.h"

#include "core/check.h"

namespace slimkv {
namespace {

// Every token's record, all kept.
class FullTable : public KvGroupTable {
 public:
  using KvGroupTable::KvGroupTable;
};

// A sliding window with optional sinks (a model's window, or static retention): a query at pos reads the sink
// blocks and the blocks not wholly before pos + 1 - window; the others are freed after each step.
class WindowTable : public KvGroupTable {
 public:
  using KvGroupTable::KvGroupTable;
  bool needed(int64_t b, int64_t pos) const override {
    const int64_t sink_blocks = (spec_.sink_tokens + bs_ - 1) / bs_;
    const int64_t lo = pos + 1 - spec_.window_tokens;  // first position the query at `pos` sees after the sinks
    return b < sink_blocks || (b + 1) * bs_ > lo;
  }
  bool frees_behind() const override { return true; }
  bool needs_every_block() const override { return false; }
};

// Dynamic retention: sinks + the recent window + the most attended blocks up to the budget.
class DynamicTopKTable : public KvGroupTable {
 public:
  using KvGroupTable::KvGroupTable;
  bool evicts_by_attention() const override { return true; }
};

// Compressed entries, one record per entry_tokens tokens: entry block j is complete (and registered under the hash
// of) token block (j + 1) * entry_tokens - 1; a hit resumes only where the entries end on a block boundary.
class EntriesTable : public KvGroupTable {
 public:
  using KvGroupTable::KvGroupTable;
  int64_t block_for_token_block(int64_t tb) const override {
    return (tb + 1) % spec_.entry_tokens == 0 ? (tb + 1) / spec_.entry_tokens - 1 : -1;
  }
  bool needs_every_block() const override { return false; }
  bool resumable(const std::vector<BlockId>& found, int64_t n) const override {
    const int64_t entries = n * bs_ / spec_.entry_tokens, eb = entries / bs_;
    if (entries % bs_ != 0 || static_cast<int64_t>(found.size()) < eb) return false;
    for (int64_t j = 0; j < eb; ++j) {
      if (found[j] < 0) return false;
    }
    return true;
  }
  std::vector<BlockId> hit_table(const std::vector<BlockId>& found, int64_t n) const override {
    const int64_t count = n * bs_ / spec_.entry_tokens / bs_;
    return std::vector<BlockId>(found.begin(), found.begin() + count);
  }
};

// One state per sequence, updated in place (linear-attention layers): one block, read and rewritten by every chunk.
// Prefix caching through snapshots (snapshots_state): a hit of n token blocks resumes from the state after them.
class RecurrentTable : public KvGroupTable {
 public:
  using KvGroupTable::KvGroupTable;
  int64_t block_for_token_block(int64_t) const override { return -1; }  // the live state is never shared
  bool needs_every_block() const override { return false; }
  bool snapshots_state() const override { return true; }
  bool resumable(const std::vector<BlockId>& found, int64_t n) const override {
    return static_cast<int64_t>(found.size()) >= n && found[n - 1] >= 0;
  }
  std::vector<BlockId> hit_table(const std::vector<BlockId>& found, int64_t n) const override {
    return n > 0 ? std::vector<BlockId>{found[n - 1]} : std::vector<BlockId>{};
  }
};

}  // namespace

bool KvGroupTable::resumable(const std::vector<BlockId>& found, int64_t n) const {
  for (int64_t b = 0; b < n; ++b) {
    if (found[b] < 0 && needed(b, n * bs_)) return false;
  }
  return true;
}

std::vector<BlockId> KvGroupTable::hit_table(const std::vector<BlockId>& found, int64_t n) const {
  std::vector<BlockId> out;
  for (int64_t b = 0; b < n; ++b) out.push_back(needed(b, n * bs_) ? found[b] : -1);
  return out;
}

std::unique_ptr<KvGroupTable> make_group_table(const KvGroupSpec& spec, int32_t block_size) {
  switch (spec.kind) {
    case KvGroupKind::FullAttention: return std::make_unique<FullTable>(spec, block_size);
    case KvGroupKind::Window: return std::make_unique<WindowTable>(spec, block_size);
    case KvGroupKind::DynamicTopK: return std::make_unique<DynamicTopKTable>(spec, block_size);
    case KvGroupKind::Entries: return std::make_unique<EntriesTable>(spec, block_size);
    case KvGroupKind::Recurrent: return std::make_unique<RecurrentTable>(spec, block_size);
  }
  fail("KV group: unknown kind {}", static_cast<int>(spec.kind));
}

}  // namespace slimkv
