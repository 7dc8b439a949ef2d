// `slimkv bench bandwidth`: a STREAM-like read loop — the memory bandwidth a decode step can use at most, per
// thread count (scripts/bench-vs-llamacpp divides weight bytes per token by it). A benchmark, not a test.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "core/thread_pool.h"
#include "tools/commands.h"

namespace slimkv {
namespace {

// Sums 64-byte lines of [p, p + bytes) as integers: every byte is loaded once, nothing is written. With
// ahead_bytes > 0 each line is also prefetched that far ahead, as the decode kernels do (on AMD Zen 5 a thread
// reads ~15% more that way); the command reports the better of the two loops.
__attribute__((target("avx2"))) uint64_t read_all(const uint8_t* p, int64_t bytes, int64_t ahead_bytes) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i + 128 <= bytes; i += 128) {
    if (ahead_bytes > 0) {
      _mm_prefetch(reinterpret_cast<const char*>(p + i + ahead_bytes), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p + i + ahead_bytes + 64), _MM_HINT_T0);
    }
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  uint64_t out[4];
  std::memcpy(out, &s, 32);
  return out[0] + out[1] + out[2] + out[3];
}

}  // namespace

void add_bench_bandwidth_command(CLI::App& bench, std::vector<Command>& out) {
  struct Flags {
    std::vector<int32_t> threads = {1, 2};
    int64_t mib = 1024;
    int32_t repeats = 7;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  auto* sub = bench.add_subcommand("bandwidth", "Memory read bandwidth (STREAM-like read loop), GB/s per thread count");
  sub->add_option("--threads", f->threads, "Thread counts")->check(CLI::Range(1, 1024));
  sub->add_option("--mib", f->mib, "Buffer size in MiB (well above the last-level cache)")->check(CLI::Range(64, 65536));
  sub->add_option("-r,--repeats", f->repeats, "Passes per thread count (best one is reported)")->check(CLI::Range(1, 100));
  sub->add_flag("--json", f->json, "Print JSON");
  out.push_back({sub, [f] {
                   const int64_t bytes = f->mib << 20;
                   std::unique_ptr<uint8_t[], decltype(&std::free)> buf(
                       static_cast<uint8_t*>(std::aligned_alloc(64, static_cast<size_t>(bytes))), &std::free);
                   for (int64_t i = 0; i < bytes; i += 4096) buf[i] = static_cast<uint8_t>(i >> 12);
                   std::printf(f->json ? "[" : "| threads | read GB/s (best of %d plain + %d prefetching passes) |\n|---|---|\n", f->repeats,
                               f->repeats);
                   for (size_t k = 0; k < f->threads.size(); ++k) {
                     const int32_t t = f->threads[k];
                     ThreadPool pool(t);
                     double best = 0;
                     volatile uint64_t sink = 0;
                     for (int32_t r = 0; r < 2 * f->repeats; ++r) {  // even passes plain, odd ones prefetching
                       const int64_t ahead = r % 2 ? 4096 : 0;
                       const auto t0 = std::chrono::steady_clock::now();
                       const int64_t chunks = 64;
                       const int64_t per = bytes / chunks;
                       std::vector<uint64_t> sums(chunks);
                       pool.parallel_for(chunks, 1, [&](int64_t c0, int64_t c1, int32_t) {
                         for (int64_t c = c0; c < c1; ++c) sums[c] = read_all(buf.get() + c * per, per, ahead);
                       });
                       const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                       for (uint64_t v : sums) sink = sink + v;
                       best = std::max(best, static_cast<double>(bytes) / s / 1e9);
                     }
                     if (f->json) std::printf("%s{\"threads\": %d, \"read_gbps\": %.2f}", k ? ", " : "", t, best);
                     else std::printf("| %d | %.1f |\n", t, best);
                   }
                   if (f->json) std::printf("]\n");
                   return 0;
                 }});
}

}  // namespace slimkv
