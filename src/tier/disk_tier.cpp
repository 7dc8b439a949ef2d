#include "tier/disk_tier.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/check.h"
#include "tier/tier_format.h"

namespace slimkv {
namespace fs = std::filesystem;
using namespace tier_format;

DiskTier::DiskTier(DiskTierConfig cfg) : cfg_(std::move(cfg)) {
  SLIMKV_CHECK(!cfg_.dir.empty(), "--kv-offload-dir: a directory is needed");
  SLIMKV_CHECK(cfg_.max_bytes > 0 && cfg_.segment_bytes > 0 && cfg_.queue_blocks > 0,
               "the disk tier's byte limit, segment size and queue must be positive");
  std::error_code ec;
  fs::create_directories(cfg_.dir, ec);
  SLIMKV_CHECK(fs::is_directory(cfg_.dir, ec), "--kv-offload-dir {}: not a directory we can create", cfg_.dir);
  lock_fd_ = ::open((fs::path(cfg_.dir) / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  SLIMKV_CHECK(lock_fd_ >= 0 && ::flock(lock_fd_, LOCK_EX | LOCK_NB) == 0,
               "--kv-offload-dir {}: in use by another process (one server per tier directory)", cfg_.dir);
  cfg_.segment_bytes = std::max<int64_t>(1 << 16, std::min(cfg_.segment_bytes, cfg_.max_bytes / 4));
  scan();
  io_ = std::thread([this] { writer_loop(); });
}

DiskTier::~DiskTier() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  queued_.notify_all();
  io_.join();
  if (fd_ >= 0) ::close(fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

std::string DiskTier::segment_path(int64_t id) const {
  char name[40];
  std::snprintf(name, sizeof name, "segment-%08lld.kvt", static_cast<long long>(id));
  return (fs::path(cfg_.dir) / name).string();
}

void DiskTier::scan() {
  std::map<int64_t, std::string> files;
  for (const auto& e : fs::directory_iterator(cfg_.dir)) {
    long long id = -1;
    if (e.is_regular_file() && std::sscanf(e.path().filename().c_str(), "segment-%lld.kvt", &id) == 1 && id >= 0) {
      files[id] = e.path().string();
    }
  }
  for (const auto& [id, path] : files) {
    const int64_t bytes = scan_segment(id, path);
    if (bytes >= 0) segments_[id] = bytes;
    if (bytes >= 0) segment_used_[id] = static_cast<uint64_t>(id);  // older files: used less recently
    next_segment_ = std::max(next_segment_, id + 1);  // new records go to a new segment: never after a torn tail
  }
  use_clock_ = static_cast<uint64_t>(next_segment_);
  if (counters_.ignored_files > 0) {
    std::fprintf(stderr, "slimkv: KV disk tier %s: ignoring %lld segment file(s) of another model or KV layout\n",
                 cfg_.dir.c_str(), static_cast<long long>(counters_.ignored_files));
  }
}

int64_t DiskTier::scan_segment(int64_t id, const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const int64_t size = static_cast<int64_t>(::lseek(fd, 0, SEEK_END));
  std::array<uint8_t, kSegmentHeaderBytes> h{};
  if (!read_exact(fd, h.data(), h.size(), 0) || h != segment_header(cfg_.fingerprint)) {
    ::close(fd);
    ++counters_.ignored_files;
    return -1;
  }
  int64_t at = kSegmentHeaderBytes;
  std::array<uint8_t, kRecordHeaderBytes> r{};
  while (at + static_cast<int64_t>(kRecordHeaderBytes) <= size) {
    if (!read_exact(fd, r.data(), r.size(), at) || get_le<uint32_t>(r.data()) != kRecordMagic ||
        get_le<uint32_t>(r.data() + 28) != crc(r.data(), 28) || get_le<uint64_t>(r.data() + 16) != cfg_.fingerprint) {
      break;  // a torn or damaged tail: what follows is not trusted
    }
    const uint32_t payload = get_le<uint32_t>(r.data() + 4);
    if (at + static_cast<int64_t>(kRecordHeaderBytes + payload) > size) break;  // the payload was cut short
    index_[get_le<uint64_t>(r.data() + 8)] = {id, at, payload};
    at += static_cast<int64_t>(kRecordHeaderBytes + payload);
  }
  if (at < size) ++counters_.torn_tails;
  ::close(fd);
  return size;
}

bool DiskTier::put(uint64_t key, std::vector<uint8_t> payload, bool wait) {
  std::unique_lock lock(mu_);
  ++counters_.puts;
  if (index_.count(key) || queued_keys_.count(key)) return true;
  auto room = [&] {
    return static_cast<int32_t>(queue_.size()) < cfg_.queue_blocks &&
           (queue_.empty() || queued_bytes_ + static_cast<int64_t>(payload.size()) <= cfg_.queue_bytes);
  };
  if (wait) drained_.wait(lock, room);
  if (!room() || payload.size() > (size_t{1} << 31)) {
    ++counters_.dropped;
    return false;
  }
  queued_bytes_ += static_cast<int64_t>(payload.size());
  ++queued_keys_[key];
  queue_.emplace_back(key, std::move(payload));
  queued_.notify_one();
  return true;
}

bool DiskTier::contains(uint64_t key) const {
  std::lock_guard lock(mu_);
  return index_.count(key) > 0 || queued_keys_.count(key) > 0;
}

void DiskTier::flush() {
  std::unique_lock lock(mu_);
  drained_.wait(lock, [&] { return queue_.empty() && !writing_; });
}

DiskTierCounters DiskTier::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

int64_t DiskTier::stored_bytes() const {
  std::lock_guard lock(mu_);
  int64_t b = 0;
  for (const auto& [id, bytes] : segments_) b += bytes;
  return b;
}

int64_t DiskTier::stored_blocks() const {
  std::lock_guard lock(mu_);
  return static_cast<int64_t>(index_.size());
}

void DiskTier::writer_loop() {
  std::unique_lock lock(mu_);
  while (true) {
    queued_.wait(lock, [&] { return stop_ || !queue_.empty() || !read_queue_.empty(); });
    // a waiting request's prefix before writes, but alternating with them while writes are queued (a put that
    // finds the queue full is dropped; flush waits)
    if (!stop_ && !read_queue_.empty() && (queue_.empty() || !last_was_read_)) {
      last_was_read_ = true;
      read_ahead_one(lock);
      continue;
    }
    last_was_read_ = false;
    if (queue_.empty()) return;  // stopping, everything written
    auto [key, payload] = std::move(queue_.front());
    queue_.pop_front();
    queued_bytes_ -= static_cast<int64_t>(payload.size());
    writing_ = true;
    lock.unlock();
    const auto t0 = Clock::now();
    append(key, payload);
    lock.lock();
    counters_.write_ms += ms_since(t0);
    if (--queued_keys_[key] == 0) queued_keys_.erase(key);
    writing_ = false;
    drained_.notify_all();  // flush() waits for an empty queue, a waiting put() for room
  }
}

void DiskTier::append(uint64_t key, const std::vector<uint8_t>& payload) {
  const auto rh = record_header(key, cfg_.fingerprint, payload);
  int64_t segment = 0, offset = 0;
  {
    std::lock_guard lock(mu_);
    const bool full = open_segment_ >= 0 && segments_[open_segment_] >= cfg_.segment_bytes;
    if (open_segment_ < 0 || full) {  // a new segment: the next id
      if (fd_ >= 0) ::close(fd_);
      open_segment_ = next_segment_++;
      fd_ = ::open(segment_path(open_segment_).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      const auto sh = segment_header(cfg_.fingerprint);
      if (fd_ < 0 || !write_all(fd_, sh.data(), sh.size())) {
        if (counters_.dropped++ < 8) {
          std::fprintf(stderr, "slimkv: KV disk tier: cannot write %s: the block is not offloaded\n",
                       segment_path(open_segment_).c_str());
        }
        std::error_code ec;
        fs::remove(segment_path(open_segment_), ec);
        close_segment_after_failure(open_segment_, -1);
        return;
      }
      segments_[open_segment_] = static_cast<int64_t>(sh.size());
    }
    segment = open_segment_;
    offset = segments_[segment];
    touch_segment_locked(segment);
  }
  const bool ok = write_all(fd_, rh.data(), rh.size()) && write_all(fd_, payload.data(), payload.size());
  std::lock_guard lock(mu_);
  const int64_t bytes = static_cast<int64_t>(rh.size() + payload.size());
  if (!ok) {  // cut the partial record off, close the segment at its good size; the next block opens another
    if (counters_.dropped++ < 8) {
      std::fprintf(stderr, "slimkv: KV disk tier: a write to %s failed (disk full?): the block is not offloaded\n",
                   segment_path(segment).c_str());
    }
    if (::ftruncate(fd_, offset) != 0) segments_[segment] = offset + bytes;  // the torn tail stays: counted
    close_segment_after_failure(segment, offset);
    return;
  }
  segments_[segment] += bytes;
  index_[key] = {segment, offset, static_cast<uint32_t>(payload.size())};
  ++counters_.written_blocks;
  counters_.written_bytes += bytes;
  int64_t total = 0;
  for (const auto& [id, b] : segments_) total += b;
  while (total > cfg_.max_bytes && segments_.size() > 1) total -= evict_least_recent_locked();
}

void DiskTier::close_segment_after_failure(int64_t segment, int64_t good_bytes) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (good_bytes < 0) segments_.erase(segment);         // never written: removed
  else if (segments_[segment] < good_bytes) segments_[segment] = good_bytes;
  open_segment_ = -1;                                   // none open: the next block starts the next segment
}

void DiskTier::touch_segment_locked(int64_t segment) { segment_used_[segment] = ++use_clock_; }

// LRU by segment: the segment whose blocks were read or written least recently (never the one being appended to).
int64_t DiskTier::evict_least_recent_locked() {
  int64_t id = -1;
  for (const auto& [seg, bytes] : segments_) {
    if (seg != open_segment_ && (id < 0 || segment_used_[seg] < segment_used_[id])) id = seg;
  }
  if (id < 0) id = segments_.begin()->first;
  const int64_t bytes = segments_[id];
  segments_.erase(id);
  segment_used_.erase(id);
  for (auto it = index_.begin(); it != index_.end();) {
    it = it->second.segment == id ? index_.erase(it) : std::next(it);
  }
  std::error_code ec;
  fs::remove(segment_path(id), ec);
  ++counters_.evicted_segments;
  return bytes;
}

}  // namespace slimkv
