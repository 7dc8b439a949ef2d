// The disk tier's file format (tier/disk_tier.h): a segment header (magic, fingerprint, version, CRC) and
// records of [header: magic, payload bytes, key, fingerprint, payload CRC-32, header CRC-32 | payload]; with the
// positioned read / full write and timing helpers the tier's writer and reader share.
// Must not know: what a payload holds.
#pragma once
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

namespace slimkv::tier_format {
using Clock = std::chrono::steady_clock;

constexpr char kSegmentMagic[8] = {'S', 'K', 'V', 'T', 'I', 'E', 'R', '1'};
constexpr uint32_t kRecordMagic = 0x42564b53;  // "SKVB"
constexpr size_t kSegmentHeaderBytes = 32;      // magic[8] fingerprint u64, reserved u64, version u32, crc u32
constexpr size_t kRecordHeaderBytes = 32;       // magic u32, payload_bytes u32, key u64, fingerprint u64,
                                                // payload crc u32, header crc u32 (over the 28 bytes before it)

inline uint32_t crc(const void* p, size_t n) {
  return static_cast<uint32_t>(crc32_z(0L, static_cast<const Bytef*>(p), n));
}

template <class T>
inline void put_le(uint8_t* at, T v) { std::memcpy(at, &v, sizeof v); }  // x86: little-endian
template <class T>
inline T get_le(const uint8_t* at) {
  T v;
  std::memcpy(&v, at, sizeof v);
  return v;
}

inline std::array<uint8_t, kSegmentHeaderBytes> segment_header(uint64_t fingerprint) {
  std::array<uint8_t, kSegmentHeaderBytes> h{};
  std::memcpy(h.data(), kSegmentMagic, 8);
  put_le<uint64_t>(h.data() + 8, fingerprint);
  put_le<uint32_t>(h.data() + 24, 1);
  put_le<uint32_t>(h.data() + 28, crc(h.data(), 28));
  return h;
}

inline std::array<uint8_t, kRecordHeaderBytes> record_header(uint64_t key, uint64_t fingerprint,
                                                             const std::vector<uint8_t>& payload) {
  std::array<uint8_t, kRecordHeaderBytes> h{};
  put_le<uint32_t>(h.data(), kRecordMagic);
  put_le<uint32_t>(h.data() + 4, static_cast<uint32_t>(payload.size()));
  put_le<uint64_t>(h.data() + 8, key);
  put_le<uint64_t>(h.data() + 16, fingerprint);
  put_le<uint32_t>(h.data() + 24, crc(payload.data(), payload.size()));
  put_le<uint32_t>(h.data() + 28, crc(h.data(), 28));
  return h;
}

inline bool read_exact(int fd, void* buf, size_t n, int64_t offset) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, static_cast<uint8_t*>(buf) + done, n - done, offset + static_cast<int64_t>(done));
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

inline bool write_all(int fd, const void* buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(fd, static_cast<const uint8_t*>(buf) + done, n - done);
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace slimkv::tier_format
