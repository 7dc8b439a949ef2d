// The disk tier's store (issue T): prefix-cache blocks kept on local disk in append-only segment files, keyed by
// the prefix cache's chain hash, each record checked by CRC-32 (zlib) over its header and payload; a bounded
// queue written by the tier's own I/O thread (never the engine's); an index rebuilt from the files at start (a torn
// tail ignored, files of another model or layout — another fingerprint — ignored with one log line); the least
// recently used segments (read or written) deleted past the byte limit. A read that fails, is short or does not
// check is a miss, counted.
// Must not know: the KV layout, blocks' meaning or the engine (payloads are opaque bytes).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace slimkv {

struct DiskTierConfig {
  std::string dir;                           // created if absent
  int64_t max_bytes = int64_t{1} << 30;      // the tier's files in all; least recently used segments go beyond it
  uint64_t fingerprint = 0;                  // model + layout + compression + rank: other files are not read
  int64_t segment_bytes = int64_t{64} << 20; // a segment is closed once it holds this much
  int32_t queue_blocks = 256;                // blocks waiting to be written; a put beyond is dropped (counted)
  int64_t queue_bytes = int64_t{64} << 20;   // and their bytes at most
  int64_t read_ahead_bytes = int64_t{64} << 20;  // payloads prefetch() may hold read and checked, waiting for get()
};

struct DiskTierCounters {
  int64_t puts = 0, dropped = 0, written_blocks = 0, written_bytes = 0;
  int64_t hits = 0, misses = 0, corrupt = 0, read_bytes = 0;
  int64_t evicted_segments = 0, ignored_files = 0, torn_tails = 0;
  double write_ms = 0, read_ms = 0;  // read_ms: get()'s own reads and waits (the caller's thread)
  int64_t prefetched = 0;            // blocks read ahead by the I/O thread (prefetch)
  int64_t prefetch_used = 0;         // ... that a get() then took from memory
  double prefetch_ms = 0;            // the I/O thread's time reading them
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
  // Taken from the read-ahead when prefetch() read it (waits for a read in flight), else read here.
  std::optional<std::vector<uint8_t>> get(uint64_t key);
  // Has the I/O thread read and check these blocks ahead of get() (a waiting request's prefix, before it is
  // admitted), alternating with queued writes; keys absent or already read ahead are skipped. Room is made by
  // letting go the oldest payloads get() never took; keys beyond read_ahead_bytes even so are left to get().
  void prefetch(std::span<const uint64_t> keys);
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
  void writer_loop();  // the I/O thread: reads ahead first, then queued writes
  // Reads and checks a record (no lock held); false when short or it fails its check.
  bool read_record(uint64_t key, const Location& loc, std::vector<uint8_t>& payload) const;
  void forget_corrupt_locked(uint64_t key, const Location& loc);  // counts, logs, unindexes
  void read_ahead_one(std::unique_lock<std::mutex>& lock);  // the I/O thread: the next prefetch
  std::optional<std::vector<uint8_t>> take_read_ahead_locked(uint64_t key, std::unique_lock<std::mutex>& lock);
  void append(uint64_t key, const std::vector<uint8_t>& payload);  // the I/O thread
  void close_segment_after_failure(int64_t segment, int64_t good_bytes);  // I/O thread, under mu_
  int64_t evict_least_recent_locked();  // deletes one segment, returns its bytes
  void touch_segment_locked(int64_t segment);  // a block of it was read or written: most recently used
  std::string segment_path(int64_t id) const;

  DiskTierConfig cfg_;
  mutable std::mutex mu_;              // index_, segments_, queue_, counters_
  std::condition_variable queued_, drained_;
  std::unordered_map<uint64_t, Location> index_;
  std::map<int64_t, int64_t> segments_;  // id -> bytes
  std::unordered_map<int64_t, uint64_t> segment_used_;  // id -> use_clock_ at its last read or write (LRU)
  uint64_t use_clock_ = 0;
  std::deque<std::pair<uint64_t, std::vector<uint8_t>>> queue_;
  std::unordered_map<uint64_t, int32_t> queued_keys_;
  DiskTierCounters counters_;
  int64_t open_segment_ = -1;          // the one being appended to (-1: none)
  int64_t next_segment_ = 0;           // the id the next segment takes (above every file found at start)
  int fd_ = -1;                        // its file (the I/O thread's)
  int lock_fd_ = -1;                   // DIR/lock, flock()ed: one process per tier directory
  int64_t queued_bytes_ = 0;
  bool writing_ = false, stop_ = false;
  std::deque<std::pair<uint64_t, int64_t>> read_queue_;  // prefetch()ed keys to read, with the bytes reserved
  std::unordered_map<uint64_t, std::vector<uint8_t>> read_ahead_;  // read and checked, waiting for get()
  std::deque<uint64_t> read_ahead_order_;  // oldest first (let go to make room)
  int64_t read_ahead_bytes_ = 0;       // read_ahead_'s payloads + read_queue_'s and the read in flight's reservations
  bool reading_ = false;               // a prefetch is being read now (its key; its bytes stay reserved)
  uint64_t reading_key_ = 0;
  bool last_was_read_ = false;         // the I/O thread alternates reads ahead and writes while both wait
  std::condition_variable read_done_;
  bool queued_for_read_locked(uint64_t key) const;
  void let_go_oldest_read_ahead_locked();  // one never-taken payload, to make room
  std::thread io_;
};

}  // namespace slimkv
