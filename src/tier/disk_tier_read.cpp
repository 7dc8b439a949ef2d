// DiskTier's reads (tier/disk_tier.h): get() on the caller's thread, and the read-ahead — prefetch() queues keys the
// I/O thread reads and checks before any write, get() then takes them from memory (or waits for the one in flight).
#include <fcntl.h>

#include <algorithm>
#include <cstdio>

#include "tier/disk_tier.h"
#include "tier/tier_format.h"

namespace slimkv {

using namespace tier_format;

bool DiskTier::read_record(uint64_t key, const Location& loc, std::vector<uint8_t>& payload) const {
  payload.resize(loc.payload_bytes);
  std::array<uint8_t, kRecordHeaderBytes> h{};
  const int fd = ::open(segment_path(loc.segment).c_str(), O_RDONLY | O_CLOEXEC);
  const bool read = fd >= 0 && read_exact(fd, h.data(), h.size(), loc.offset) &&
                    read_exact(fd, payload.data(), payload.size(), loc.offset + kRecordHeaderBytes);
  if (fd >= 0) ::close(fd);
  return read && get_le<uint32_t>(h.data()) == kRecordMagic && get_le<uint64_t>(h.data() + 8) == key &&
         get_le<uint32_t>(h.data() + 4) == loc.payload_bytes && get_le<uint32_t>(h.data() + 28) == crc(h.data(), 28) &&
         get_le<uint32_t>(h.data() + 24) == crc(payload.data(), payload.size());
}

void DiskTier::forget_corrupt_locked(uint64_t key, const Location& loc) {
  if (counters_.corrupt++ < 8) {
    std::fprintf(stderr, "slimkv: KV disk tier: block %016llx in %s failed its check (short read or checksum): "
                 "recomputed\n", static_cast<unsigned long long>(key), segment_path(loc.segment).c_str());
  }
  index_.erase(key);
}

bool DiskTier::queued_for_read_locked(uint64_t key) const {
  for (const auto& [k, bytes] : read_queue_) {
    if (k == key) return true;
  }
  return false;
}

void DiskTier::let_go_oldest_read_ahead_locked() {
  while (!read_ahead_order_.empty()) {
    auto it = read_ahead_.find(read_ahead_order_.front());
    read_ahead_order_.pop_front();
    if (it == read_ahead_.end()) continue;  // taken by get() since
    read_ahead_bytes_ -= static_cast<int64_t>(it->second.size());
    read_ahead_.erase(it);
    return;
  }
}

std::optional<std::vector<uint8_t>> DiskTier::take_read_ahead_locked(uint64_t key,
                                                                     std::unique_lock<std::mutex>& lock) {
  // a read in flight: waited for (never slower than reading it again)
  read_done_.wait(lock, [&] { return !(reading_ && reading_key_ == key); });
  for (auto q = read_queue_.begin(); q != read_queue_.end(); ++q) {
    if (q->first != key) continue;
    read_ahead_bytes_ -= q->second;  // not read yet: the caller reads it now, the I/O thread need not
    read_queue_.erase(q);
    break;
  }
  auto it = read_ahead_.find(key);
  if (it == read_ahead_.end()) return std::nullopt;
  std::vector<uint8_t> payload = std::move(it->second);
  read_ahead_.erase(it);
  read_ahead_bytes_ -= static_cast<int64_t>(payload.size());
  ++counters_.prefetch_used;
  return payload;
}

std::optional<std::vector<uint8_t>> DiskTier::get(uint64_t key) {
  const auto t0 = Clock::now();
  Location loc;
  {
    std::unique_lock lock(mu_);
    for (const auto& [k, payload] : queue_) {  // not written yet: the bytes are here
      if (k == key) {
        ++counters_.hits;
        return payload;
      }
    }
    if (auto ahead = take_read_ahead_locked(key, lock)) {
      ++counters_.hits;
      counters_.read_ms += ms_since(t0);
      return ahead;
    }
    auto it = index_.find(key);
    if (it == index_.end()) {
      ++counters_.misses;
      return std::nullopt;
    }
    loc = it->second;
  }
  std::vector<uint8_t> payload;
  const bool ok = read_record(key, loc, payload);
  std::lock_guard lock(mu_);
  counters_.read_ms += ms_since(t0);
  if (!ok) {  // a miss: the block is recomputed; the record is forgotten
    forget_corrupt_locked(key, loc);
    ++counters_.misses;
    return std::nullopt;
  }
  ++counters_.hits;
  counters_.read_bytes += static_cast<int64_t>(kRecordHeaderBytes + payload.size());
  touch_segment_locked(loc.segment);
  return payload;
}

void DiskTier::prefetch(std::span<const uint64_t> keys) {
  {
    std::lock_guard lock(mu_);
    for (uint64_t key : keys) {
      auto it = index_.find(key);
      if (it == index_.end() || read_ahead_.count(key) || (reading_ && key == reading_key_) ||
          queued_for_read_locked(key)) {
        continue;
      }
      const int64_t bytes = it->second.payload_bytes;
      while (read_ahead_bytes_ + bytes > cfg_.read_ahead_bytes && !read_ahead_.empty()) {
        let_go_oldest_read_ahead_locked();
      }
      if (read_ahead_bytes_ + bytes > cfg_.read_ahead_bytes) break;  // get() reads the rest
      read_ahead_bytes_ += bytes;
      read_queue_.emplace_back(key, bytes);
    }
  }
  queued_.notify_all();
}

void DiskTier::read_ahead_one(std::unique_lock<std::mutex>& lock) {
  const auto [key, reserved] = read_queue_.front();
  read_queue_.pop_front();
  auto it = index_.find(key);
  if (it == index_.end()) {  // evicted (or found corrupt) since
    read_ahead_bytes_ -= reserved;
    return;
  }
  const Location loc = it->second;
  reading_ = true;
  reading_key_ = key;
  lock.unlock();
  const auto t0 = Clock::now();
  std::vector<uint8_t> payload;
  const bool ok = read_record(key, loc, payload);
  lock.lock();
  counters_.prefetch_ms += ms_since(t0);
  reading_ = false;
  read_ahead_bytes_ -= reserved;
  if (!ok) {
    forget_corrupt_locked(key, loc);
  } else {
    ++counters_.prefetched;
    touch_segment_locked(loc.segment);
    counters_.read_bytes += static_cast<int64_t>(kRecordHeaderBytes + payload.size());
    const int64_t bytes = static_cast<int64_t>(payload.size());
    if (read_ahead_.emplace(key, std::move(payload)).second) {  // (never there: prefetch skips such keys)
      read_ahead_bytes_ += bytes;
      read_ahead_order_.push_back(key);
    }
    if (read_ahead_order_.size() > 2 * read_ahead_.size() + 64) {  // drop the keys get() has taken
      std::erase_if(read_ahead_order_, [&](uint64_t k) { return !read_ahead_.count(k); });
    }
  }
  read_done_.notify_all();
}

}  // namespace slimkv
