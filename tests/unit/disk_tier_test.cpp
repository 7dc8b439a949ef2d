// The disk tier's store (issue T): blocks written by its I/O thread come back byte for byte, also after a restart
// (the index rebuilt from the segment files); a corrupted, truncated or foreign file gives misses, never wrong
// bytes or a crash; the byte limit deletes the oldest segments; a process SIGKILLed while writing leaves a tier
// that loads and whose every indexed block checks.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/check.h"
#include "tier/disk_tier.h"

namespace slimkv::test {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> block(uint64_t key, size_t bytes = 4096) {
  std::vector<uint8_t> v(bytes);
  std::mt19937_64 rng(key);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::string fresh_dir(const std::string& tag) {
  const std::string d = ::testing::TempDir() + "/tier-" + tag + "-" + std::to_string(::getpid());
  fs::remove_all(d);
  return d;
}

DiskTierConfig config(const std::string& dir, uint64_t fingerprint = 42) {
  DiskTierConfig c;
  c.dir = dir;
  c.fingerprint = fingerprint;
  c.segment_bytes = 64 << 10;  // a few dozen blocks per segment
  return c;
}

std::vector<std::string> segment_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("segment-", 0) == 0) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The read-ahead: prefetched blocks are read and checked by the I/O thread, then get() takes them from memory (the
// same bytes); a corrupted one is a miss there too; keys beyond the read-ahead's bytes are left to get().
TEST(DiskTier, PrefetchedBlocksComeFromMemoryAndStillCheck) {
  const std::string dir = fresh_dir("prefetch");
  {
    DiskTier t(config(dir));
    for (uint64_t k = 1; k <= 12; ++k) EXPECT_TRUE(t.put(k, block(k)));
    t.flush();
  }
  const std::string seg = segment_files(dir).front();
  {
    std::fstream f(seg, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(32 + 32 + 100);  // record 1's payload (the segment header, then the first record's header)
    f.put('\x5a');
  }
  DiskTierConfig c = config(dir);
  c.read_ahead_bytes = 8 * 4096;
  DiskTier t(c);
  std::vector<uint64_t> keys;
  for (uint64_t k = 1; k <= 12; ++k) keys.push_back(k);
  t.prefetch(keys);
  for (int i = 0; i < 2000 && t.counters().prefetched + t.counters().corrupt < 8; ++i) ::usleep(1000);
  EXPECT_EQ(t.counters().corrupt, 1) << "the damaged record fails its check on the I/O thread";
  EXPECT_EQ(t.counters().prefetched, 7) << "8 blocks' bytes of read-ahead: 7 good, 1 corrupt, 4 left to get()";
  EXPECT_FALSE(t.get(1).has_value());
  for (uint64_t k = 2; k <= 12; ++k) EXPECT_EQ(*t.get(k), block(k)) << k;
  EXPECT_EQ(t.counters().prefetch_used, 7);
  EXPECT_EQ(t.counters().hits, 11);
}

// Read-ahead nobody takes (a request cancelled, its blocks computed after all) is let go for newer prefetches: the
// read-ahead never fills up for good.
TEST(DiskTier, ReadAheadNeverTakenMakesRoomForNewerPrefetches) {
  const std::string dir = fresh_dir("prefetch-room");
  DiskTierConfig c = config(dir);
  c.read_ahead_bytes = 4 * 4096;
  DiskTier t(c);
  for (uint64_t k = 1; k <= 16; ++k) EXPECT_TRUE(t.put(k, block(k)));
  t.flush();
  auto wait_for = [&](int64_t n) {
    for (int i = 0; i < 2000 && t.counters().prefetched < n; ++i) ::usleep(1000);
  };
  const std::vector<uint64_t> first = {1, 2, 3, 4}, second = {5, 6, 7, 8}, third = {9, 10};
  t.prefetch(first);
  wait_for(4);
  t.prefetch(second);  // the first four are never taken: let go
  wait_for(8);
  EXPECT_EQ(t.counters().prefetched, 8);
  for (uint64_t k : second) EXPECT_EQ(*t.get(k), block(k)) << k;
  EXPECT_EQ(t.counters().prefetch_used, 4);
  t.prefetch(third);
  wait_for(10);
  EXPECT_EQ(t.counters().prefetched, 10);
  EXPECT_EQ(*t.get(1), block(1)) << "let go of, still on disk";
}

TEST(DiskTier, BlocksComeBackAlsoAfterARestart) {
  const std::string dir = fresh_dir("restart");
  {
    DiskTier t(config(dir));
    for (uint64_t k = 1; k <= 40; ++k) EXPECT_TRUE(t.put(k, block(k)));
    EXPECT_EQ(*t.get(7), block(7)) << "readable while queued or written";
    t.flush();
    EXPECT_EQ(t.stored_blocks(), 40);
    EXPECT_EQ(t.counters().written_blocks, 40);
    EXPECT_FALSE(t.get(999).has_value());
  }
  DiskTier again(config(dir));
  EXPECT_EQ(again.stored_blocks(), 40);
  for (uint64_t k = 1; k <= 40; ++k) ASSERT_EQ(again.get(k), block(k)) << k;
  EXPECT_EQ(again.counters().hits, 40);
  EXPECT_EQ(again.counters().corrupt, 0);
}

TEST(DiskTier, ACorruptedBlockIsAMissAndTheOthersStillRead) {
  const std::string dir = fresh_dir("corrupt");
  {
    DiskTier t(config(dir));
    for (uint64_t k = 1; k <= 3; ++k) t.put(k, block(k));
  }
  const std::string seg = segment_files(dir).front();
  {
    std::fstream f(seg, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(32 + (32 + 4096) + 32 + 100);  // a byte inside block 2's payload
    f.put('\x5a');
  }
  DiskTier t(config(dir));
  EXPECT_EQ(t.get(1), block(1));
  EXPECT_FALSE(t.get(2).has_value()) << "a block that fails its checksum is never returned";
  EXPECT_EQ(t.get(3), block(3));
  EXPECT_EQ(t.counters().corrupt, 1);
  EXPECT_FALSE(t.get(2).has_value()) << "forgotten after the failed check";
}

TEST(DiskTier, ATruncatedTailIsIgnoredAndWritingGoesOn) {
  const std::string dir = fresh_dir("torn");
  {
    DiskTier t(config(dir));
    for (uint64_t k = 1; k <= 5; ++k) t.put(k, block(k));
  }
  const std::string seg = segment_files(dir).front();
  fs::resize_file(seg, fs::file_size(seg) - 1000);  // block 5 cut short
  {
    DiskTier t(config(dir));
    EXPECT_EQ(t.counters().torn_tails, 1);
    EXPECT_EQ(t.stored_blocks(), 4);
    for (uint64_t k = 1; k <= 4; ++k) EXPECT_EQ(t.get(k), block(k));
    EXPECT_FALSE(t.get(5).has_value());
    t.put(5, block(5));
    t.put(6, block(6));
  }
  DiskTier t(config(dir));
  for (uint64_t k = 1; k <= 6; ++k) EXPECT_EQ(t.get(k), block(k)) << k;
  EXPECT_EQ(segment_files(dir).size(), 2u) << "new records never follow a torn tail";
}

TEST(DiskTier, AnotherFingerprintsFilesAreIgnored) {
  const std::string dir = fresh_dir("foreign");
  {
    DiskTier t(config(dir, 1));
    for (uint64_t k = 1; k <= 3; ++k) t.put(k, block(k));
  }
  DiskTier t(config(dir, 2));  // another model or KV layout
  EXPECT_EQ(t.counters().ignored_files, 1);
  EXPECT_EQ(t.stored_blocks(), 0);
  EXPECT_FALSE(t.get(1).has_value());
  t.put(1, block(1, 100));
  t.flush();
  EXPECT_EQ(t.get(1), block(1, 100));
}

TEST(DiskTier, TheByteLimitDeletesTheOldestSegments) {
  const std::string dir = fresh_dir("limit");
  DiskTierConfig c = config(dir);
  c.max_bytes = 256 << 10;  // 4 segments of 64 KiB
  DiskTier t(c);
  for (uint64_t k = 1; k <= 200; ++k) {  // ~800 KiB written
    t.put(k, block(k));
    if (k % 50 == 0) t.flush();
  }
  t.flush();
  EXPECT_LE(t.stored_bytes(), c.max_bytes);
  EXPECT_GT(t.counters().evicted_segments, 0);
  EXPECT_FALSE(t.get(1).has_value()) << "the oldest (none read since) went first";
  EXPECT_EQ(t.get(200), block(200)) << "the newest stays";
  int64_t bytes = 0;
  for (const auto& f : segment_files(dir)) bytes += static_cast<int64_t>(fs::file_size(f));
  EXPECT_EQ(bytes, t.stored_bytes()) << "deleted segments are gone from the disk";
}

// LRU by segment: a segment whose blocks keep being read outlives segments written after it and never read.
TEST(DiskTier, ASegmentReadRecentlyOutlivesOlderUnreadOnes) {
  const std::string dir = fresh_dir("lru");
  DiskTierConfig c = config(dir);
  c.max_bytes = 256 << 10;  // 4 segments of 64 KiB
  DiskTier t(c);
  for (uint64_t k = 1; k <= 200; ++k) {  // ~800 KiB written; block 1 (the first segment) read every 10 blocks
    t.put(k, block(k));
    if (k % 10 == 0) {
      t.flush();
      EXPECT_EQ(t.get(1), block(1)) << "after block " << k;
    }
  }
  t.flush();
  EXPECT_GT(t.counters().evicted_segments, 0);
  EXPECT_FALSE(t.get(30).has_value()) << "a segment written after it, never read, went first";
  EXPECT_EQ(t.get(200), block(200));
}

TEST(DiskTier, OneProcessPerDirectory) {
  const std::string dir = fresh_dir("lock");
  DiskTier first(config(dir));
  try {
    DiskTier second(config(dir));
    ADD_FAILURE() << "two tiers share a directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("in use by another process"), std::string::npos) << e.what();
  }
}

TEST(DiskTier, SigkillWhileWritingLeavesATierThatLoads) {
  const std::string dir = fresh_dir("sigkill");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // writes until killed
    DiskTierConfig c = config(dir);
    c.max_bytes = int64_t{1} << 40;
    DiskTier t(c);
    for (uint64_t k = 1;; ++k) {
      while (!t.put(k, block(k, 65536))) ::usleep(100);
    }
  }
  for (int i = 0; i < 400 && (!fs::exists(dir) || segment_files(dir).size() < 3); ++i) ::usleep(10000);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ::waitpid(child, &status, 0);
  DiskTier t(config(dir));
  ASSERT_GT(t.stored_blocks(), 0);
  int64_t checked = 0;
  for (uint64_t k = 1; k <= static_cast<uint64_t>(t.stored_blocks()) + 64; ++k) {
    if (auto b = t.get(k)) {
      ASSERT_EQ(*b, block(k, 65536)) << k;
      ++checked;
    }
  }
  EXPECT_EQ(checked, t.stored_blocks());
  EXPECT_EQ(t.counters().corrupt, 0);
}

}  // namespace
}  // namespace slimkv::test
