#include "grammar/stack_set_table.h"

#include <algorithm>

#include "grammar/grammar_error.h"

namespace slimkv::grammar {

size_t StackSetTable::KeyHash::operator()(const std::vector<int32_t>& k) const {
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (int32_t v : k) h = (h ^ static_cast<uint32_t>(v)) * 0x100000001b3ULL;
  return static_cast<size_t>(h ^ (h >> 29));
}

uint32_t StackSetTable::intern(StackSet set) {
  std::sort(set.tops.begin(), set.tops.end());
  std::vector<int32_t> key = set.tops;
  key.push_back(set.complete ? -1 : -2);
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  if (sets_.size() >= kMaxSets) grammar_fail("grammar state too large: more than {} distinct parse sets", kMaxSets);
  const auto id = static_cast<uint32_t>(sets_.size());
  next_.push_back(stepper_.next_bytes(set));
  sets_.push_back(std::move(set));
  safe_.emplace_back();
  by_signature_.emplace_back();
  row_.push_back(kNoRow);
  steps_.push_back(0);
  ids_.emplace(std::move(key), id);
  return id;
}

uint32_t StackSetTable::compute_step(uint32_t id, uint8_t byte) {
  if (!next_[id].test(byte)) return kDead;
  const std::vector<int32_t>& tops = sets_[id].tops;
  const bool by_sig = tops.size() <= 64;
  uint64_t sig = 0;
  if (by_sig) {
    for (size_t i = 0; i < tops.size(); ++i) sig |= uint64_t{stepper_.top_accepts(tops[i], byte)} << i;
    for (const auto& [known, next] : by_signature_[id])
      if (known == sig) return next;
  }
  stepper_.step(sets_[id], byte, scratch_);
  const uint32_t next = scratch_.dead() ? kDead : intern(scratch_);
  if (by_sig) by_signature_[id].push_back({sig, next});
  return next;
}

// Every byte of [lo, hi] is accepted by the same tops of set `id` (so all step to one set).
bool StackSetTable::uniform(uint32_t id, uint8_t lo, uint8_t hi) const {
  for (int32_t h : sets_[id].tops) {
    const ByteClass& c = stepper_.top_class(h);
    const bool first = c.test(lo);
    for (int w = lo >> 6; w <= hi >> 6; ++w) {  // the range's bits in each 64-bit word: all set or none
      const int from = std::max<int>(lo, w * 64) - w * 64, to = std::min<int>(hi, w * 64 + 63) - w * 64;
      const uint64_t m = (to == 63 ? ~uint64_t{0} : (uint64_t{1} << (to + 1)) - 1) & ~((uint64_t{1} << from) - 1);
      if ((c.bits[static_cast<size_t>(w)] & m) != (first ? m : 0)) return false;
    }
  }
  return true;
}

void StackSetTable::grow() {
  std::vector<uint64_t> old_keys(keys_.size() * 2, kNoKey);
  std::vector<uint32_t> old_values(values_.size() * 2, 0);
  old_keys.swap(keys_);
  old_values.swap(values_);
  for (size_t i = 0; i < old_keys.size(); ++i) {
    if (old_keys[i] == kNoKey) continue;
    const size_t slot = slot_of(old_keys[i]);
    keys_[slot] = old_keys[i];
    values_[slot] = old_values[i];
  }
}

ByteClass StackSetTable::safe_class(uint32_t id, uint32_t depth) {
  fill_safe(id, depth);
  return safe_[id].k[depth];
}

void StackSetTable::fill_safe(uint32_t id, uint32_t depth) {
  if (safe_[id].filled >= depth) return;
  if (safe_[id].filled == 0) {  // U(id): the bytes going to the most common successor
    std::vector<std::pair<uint32_t, int>> counts;
    std::array<uint32_t, 256> to{};
    for (int b = 0; b < 256; ++b) {
      to[b] = next_[id].test(static_cast<uint8_t>(b)) ? compute_step(id, static_cast<uint8_t>(b)) : kDead;
      if (to[b] == kDead) continue;
      auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == to[b]; });
      if (it == counts.end()) counts.push_back({to[b], 1});
      else ++it->second;
    }
    ByteClass u;
    uint32_t succ = kDead;
    if (!counts.empty()) {
      succ = std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
      for (int b = 0; b < 256; ++b)
        if (to[b] == succ) u.set(static_cast<uint8_t>(b));
    }
    safe_[id].successor = succ;
    safe_[id].k[0] = u;
    safe_[id].k[1] = u;
    safe_[id].filled = 1;
  }
  const uint32_t succ = safe_[id].successor;
  for (uint32_t d = safe_[id].filled + 1; d <= depth; ++d) {
    ByteClass k = safe_[id].k[0];
    if (succ == kDead) {
      k = ByteClass{};
    } else {
      if (succ != id) fill_safe(succ, d - 1);
      for (int w = 0; w < 4; ++w) k.bits[w] &= safe_[succ].k[d - 1].bits[w];
    }
    safe_[id].k[d] = k;
    safe_[id].filled = d;
  }
}

void StackSetTable::clear() {
  sets_.clear();
  next_.clear();
  safe_.clear();
  by_signature_.clear();
  keys_.assign(4096, kNoKey);
  values_.assign(4096, 0);
  transition_count_ = 0;
  row_.clear();
  steps_.clear();
  rows_.clear();
  ids_.clear();
}

}  // namespace slimkv::grammar
