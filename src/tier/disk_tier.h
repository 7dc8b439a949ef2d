// The disk tier's store (issue T): prefix-cache blocks kept on local disk in append-only segment files, keyed by
// the prefix cache's chain hash, each record checked by CRC-32 (zlib) over its header and payload; a bounded
// queue written by the tier's own I/O thread (never the engine's); an index rebuilt from the files at start (a torn
// tail ignored, files of another model or layout — another fingerprint — ignored with one log line); the oldest
// segments deleted past the byte limit. A read that fails, is short or does not check is a miss, counted.
// Must not know: the KV layout, blocks' meaning or the engine (payloads are opaque bytes).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace slimkv {

struct DiskTierConfig {
  std::string dir;                           // created if absent
  int64_t max_bytes = int64_t{1} << 30;      // the tier's files in all; oldest segments go first beyond it
  uint64_t fingerprint = 0;                  // model + layout + compression + rank: other files are not read
  int64_t segment_bytes = int64_t{64} << 20; // a segment is closed once it holds this much
  int32_t queue_blocks = 256;                // blocks waiting to be written; a put beyond is dropped (counted)
  int64_t queue_bytes = int64_t{64} << 20;   // and their bytes at most
};

struct DiskTierCounters {
  int64_t puts = 0, dropped = 0, written_blocks = 0, written_bytes = 0;
  int64_t hits = 0, misses = 0, corrupt = 0, read_bytes = 0;
  int64_t evicted_segments = 0, ignored_files = 0, torn_tails = 0;
  double write_ms = 0, read_ms = 0;
};

class DiskTier {
 public:
  explicit DiskTier(DiskTierConfig cfg);  // scans cfg.dir and rebuilds the index; throws Error if unusable
  ~DiskTier();                            // writes what is queued, then stops the I/O thread
  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

  // Queues a block for writing (a key already stored or queued is not written twice); false when the queue is full
  // (wait: blocks until there is room instead — shutdown's save, off the serving path).
  bool put(uint64_t key, std::vector<uint8_t> payload, bool wait = false);
  bool contains(uint64_t key) const;      // stored or queued
  // The block's payload, checked; nullopt on a miss, a short read or a checksum that does not match (counted).
  std::optional<std::vector<uint8_t>> get(uint64_t key);
  void flush();                           // returns once every queued block is written (tests, shutdown)
  DiskTierCounters counters() const;
  int64_t stored_bytes() const;           // the segment files' bytes
  int64_t stored_blocks() const;

 private:
  struct Location {
    int64_t segment = 0;
    int64_t offset = 0;           // of the record's header
    uint32_t payload_bytes = 0;
  };
  void scan();                                   // rebuilds index_ and segments_ from the directory
  int64_t scan_segment(int64_t id, const std::string& path);  // its valid bytes; indexes its records
  void writer_loop();
  void append(uint64_t key, const std::vector<uint8_t>& payload);  // the I/O thread
  void close_segment_after_failure(int64_t segment, int64_t good_bytes);  // I/O thread, under mu_
  void evict_oldest_locked();
  std::string segment_path(int64_t id) const;

  DiskTierConfig cfg_;
  mutable std::mutex mu_;              // index_, segments_, queue_, counters_
  std::condition_variable queued_, drained_;
  std::unordered_map<uint64_t, Location> index_;
  std::map<int64_t, int64_t> segments_;  // id -> bytes
  std::deque<std::pair<uint64_t, std::vector<uint8_t>>> queue_;
  std::unordered_map<uint64_t, int32_t> queued_keys_;
  DiskTierCounters counters_;
  int64_t open_segment_ = -1;          // the one being appended to (-1: none)
  int64_t next_segment_ = 0;           // the id the next segment takes (above every file found at start)
  int fd_ = -1;                        // its file (the I/O thread's)
  int lock_fd_ = -1;                   // DIR/lock, flock()ed: one process per tier directory
  int64_t queued_bytes_ = 0;
  bool writing_ = false, stop_ = false;
  std::thread io_;
};

}  // namespace slimkv
