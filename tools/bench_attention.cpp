// `slimkv bench attention`: one layer's prefill attention over a paged cache — a chunk of query tokens after D
// cached ones, in tiles (attention_tile.h) and query by query (the decode walk), per cache dtype and depth, measured
// side by side in one run (alternating, median); with --decode S, one decode step of S sequences and the walk's
// GB/s per cache dtype against f16's. A benchmark, not a test.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/kv_codec.h"
#include "kernels/matmul.h"
#include "kernels/paged_attention.h"
#include "tools/commands.h"

namespace slimkv {
namespace {

struct AttentionBenchFlags {
  std::vector<int64_t> depths = {4096, 16384};
  int32_t tokens = 512, heads = 32, kv_heads = 8, head_dim = 64, block_size = 16, repeats = 3;
  std::vector<int32_t> threads = {2};
  std::vector<std::string> dtypes = {"f16", "int8", "tq4"};
  int32_t decode_seqs = 0;  // > 0: a decode step instead — this many sequences, one query token each at the depth
};

KvDtype kv_dtype_named(const std::string& name) {
  for (KvDtype t : {KvDtype::F32, KvDtype::F16, KvDtype::Int8, KvDtype::Int4, KvDtype::Tq4, KvDtype::Tq3}) {
    if (kv_dtype_name(t) == name) return t;
  }
  throw std::runtime_error("bench attention: unknown cache dtype " + name);
}

// Bytes on 2 MiB pages where the kernel offers them, as the engine's KV storage (kv/kv_storage.cpp), so a walk over
// scattered pages is measured as the engine runs it.
struct HugeBytes {
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> p;
  size_t bytes = 0;
  void resize(size_t n) {
    constexpr size_t kHuge = size_t{2} << 20;
    p.reset(static_cast<uint8_t*>(std::aligned_alloc(kHuge, (n + kHuge - 1) / kHuge * kHuge)));
    if (!p) throw std::bad_alloc();
    advise_huge_pages(p.get(), n);
    std::memset(p.get(), 0, n);
    bytes = n;
  }
  uint8_t* data() { return p.get(); }
  size_t size() const { return bytes; }
};

struct Layer {  // one layer's cache: depth + tokens positions of one sequence, every KV head
  HugeBytes k, v;
  PagedBatchMeta meta;
  PagedAttention::LayerKv lk;
};

// seqs sequences of depth + tokens positions each (their pages interleaved), every KV head; the query tokens are the
// last `tokens` positions of each sequence.
Layer make_layer(const AttentionBenchFlags& f, KvDtype dt, int64_t depth, int32_t seqs, int32_t tokens) {
  Layer l;
  const int64_t n = depth + tokens, pages = (n + f.block_size - 1) / f.block_size;
  const int64_t slots = pages * seqs * f.block_size;
  const int64_t rb = kv_head_record_bytes(dt, f.head_dim);
  l.k.resize(static_cast<size_t>(f.kv_heads * slots * rb));
  l.v.resize(l.k.size());
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(f.head_dim);
  for (int64_t r = 0; r < f.kv_heads * slots; ++r) {
    for (auto& e : x) e = nd(rng);
    encode_kv_head(x.data(), f.head_dim, dt, l.k.data() + r * rb);
    for (auto& e : x) e = nd(rng);
    encode_kv_head(x.data(), f.head_dim, dt, l.v.data() + r * rb);
  }
  PagedBatchMeta& m = l.meta;
  m.block_size = f.block_size;
  m.kv_indptr = {0};
  for (int32_t s = 0; s < seqs; ++s) {
    for (int32_t t = 0; t < tokens; ++t) m.token_seq.push_back(s), m.token_pos.push_back(static_cast<int32_t>(depth + t));
    for (int64_t p = 0; p < pages; ++p) m.kv_indices.push_back(static_cast<int32_t>(((p * seqs + s) * 7919) % (pages * seqs)));
    m.kv_indptr.push_back(static_cast<int32_t>(m.kv_indices.size()));
    m.kv_last_page_len.push_back(static_cast<int32_t>(n - (pages - 1) * f.block_size));
  }
  l.lk = PagedAttention::LayerKv{l.k.data(), l.v.data(), f.head_dim, f.head_dim, rb, rb, slots * rb, slots * rb, dt,
                                 false};
  return l;
}

std::string fmt_ratio(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2fx", x);
  return b;
}

double time_run(const AttentionBenchFlags& f, Layer& l, bool tiled, ThreadPool& pool, const std::vector<float>& q,
                std::vector<float>& out, int32_t min_tile_tokens = kMinTileTokens) {
  PagedAttention pa;
  pa.set_tiled(tiled, min_tile_tokens);
  pa.plan(l.meta, f.heads / f.kv_heads, pool.num_threads());
  const auto t0 = std::chrono::steady_clock::now();
  pa.run(q.data(), l.lk, {f.heads, f.kv_heads, f.head_dim, f.head_dim, 0.0f, nullptr}, out.data(), &pool);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A decode step: every sequence's one query over its depth + 1 rows, query by query (the decode walk) and as tiles
// of one token (alternating); GB/s of cache records read.
void run_decode(const AttentionBenchFlags& f) {
  std::printf("| dtype | depth | sequences | threads | walk ms | walk GB/s | walk GB/s vs f16's | as 1-token tiles ms "
              "| tiles GB/s |\n|---|---|---|---|---|---|---|---|---|\n");
  const int32_t S = f.decode_seqs;
  std::vector<float> q(static_cast<size_t>(S) * f.heads * f.head_dim), out(q.size());
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& e : q) e = nd(rng);
  for (const int64_t depth : f.depths) {
    for (const int32_t th : f.threads) {
      double f16_gbps = 0;
      for (const std::string& name : f.dtypes) {
        const KvDtype dt = kv_dtype_named(name);
        Layer l = make_layer(f, dt, depth, S, 1);
        ThreadPool pool(th);
        std::vector<double> ta, tb;
        for (int32_t r = 0; r < f.repeats; ++r) {
          ta.push_back(time_run(f, l, false, pool, q, out));
          tb.push_back(time_run(f, l, true, pool, q, out, 1));
        }
        std::sort(ta.begin(), ta.end());
        std::sort(tb.begin(), tb.end());
        const double sa = ta[ta.size() / 2], sb = tb[tb.size() / 2];
        const double bytes = 2.0 * S * f.kv_heads * (depth + 1) * kv_head_record_bytes(dt, f.head_dim);
        if (name == "f16") f16_gbps = bytes / sa / 1e9;
        std::printf("| %s | %lld | %d | %d | %.2f | %.1f | %s | %.2f | %.1f |\n", name.c_str(),
                    static_cast<long long>(depth), S, th, sa * 1e3, bytes / sa / 1e9,
                    f16_gbps > 0 ? fmt_ratio(bytes / sa / 1e9 / f16_gbps).c_str() : "—", sb * 1e3, bytes / sb / 1e9);
        std::fflush(stdout);
      }
    }
  }
}

void run_bench(const AttentionBenchFlags& f) {
  if (f.decode_seqs > 0) return run_decode(f);
  std::printf("| dtype | depth | threads | tiles ms | query-by-query ms | speedup | tiles GFLOP/s | max abs diff |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::vector<float> q(static_cast<size_t>(f.tokens) * f.heads * f.head_dim);
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& e : q) e = nd(rng);
  std::vector<float> a(static_cast<size_t>(f.tokens) * f.heads * f.head_dim), b(a.size());
  for (const std::string& name : f.dtypes) {
    const KvDtype dt = kv_dtype_named(name);
    for (const int64_t depth : f.depths) {
      Layer l = make_layer(f, dt, depth, 1, f.tokens);
      for (const int32_t th : f.threads) {
        ThreadPool pool(th);
        std::vector<double> ta, tb;
        for (int32_t r = 0; r < f.repeats; ++r) {  // alternating
          ta.push_back(time_run(f, l, true, pool, q, a));
          tb.push_back(time_run(f, l, false, pool, q, b));
        }
        std::sort(ta.begin(), ta.end());
        std::sort(tb.begin(), tb.end());
        const double ma = ta[ta.size() / 2], mb = tb[tb.size() / 2];
        float diff = 0;
        for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::fabs(a[i] - b[i]));
        // multiply-adds: each token's heads over depth + its offset + 1 rows, keys and values
        const double flops = 2.0 * 2.0 * f.heads * f.head_dim * (f.tokens * (depth + (f.tokens + 1) / 2.0));
        std::printf("| %s | %lld | %d | %.1f | %.1f | %.2fx | %.1f | %.2g |\n", name.c_str(),
                    static_cast<long long>(depth), th, ma * 1e3, mb * 1e3, mb / ma, flops / ma / 1e9, diff);
        std::fflush(stdout);
      }
    }
  }
}

}  // namespace

void add_bench_attention_command(CLI::App& bench, std::vector<Command>& out) {
  auto f = std::make_shared<AttentionBenchFlags>();
  auto* sub = bench.add_subcommand("attention", "One layer's prefill attention after D cached tokens: tiles vs "
                                                 "query by query, per cache dtype (a kernel benchmark)");
  sub->add_option("-d,--depth", f->depths, "Cached tokens before the chunk")->check(CLI::Range(int64_t{0}, int64_t{1} << 22));
  sub->add_option("-p,--tokens", f->tokens, "Query tokens in the chunk")->check(CLI::Range(1, 65536));
  sub->add_option("--heads", f->heads, "Query heads")->check(CLI::Range(1, 256));
  sub->add_option("--kv-heads", f->kv_heads, "KV heads (divides --heads)")->check(CLI::Range(1, 256));
  sub->add_option("--head-dim", f->head_dim, "Head size (a multiple of 8)")->check(CLI::Range(8, 1024));
  sub->add_option("--block-size", f->block_size, "Tokens per page (a power of two)")->check(CLI::Range(1, 256));
  sub->add_option("--kv-cache-dtype", f->dtypes, "Cache dtypes: f32 f16 int8 int4 tq4 tq3");
  sub->add_option("--threads", f->threads, "Thread counts")->check(CLI::Range(1, 1024));
  sub->add_option("-r,--repeats", f->repeats, "Runs per row (median)")->check(CLI::Range(1, 100));
  sub->add_option("--decode", f->decode_seqs, "A decode step of this many sequences instead (one query each): the "
                                              "walk's GB/s per cache dtype, against f16 (list f16 first)")
      ->check(CLI::Range(1, 1024));
  out.push_back({sub, [f] {
                   if (f->heads % f->kv_heads != 0 || f->head_dim % 8 != 0 ||
                       (f->block_size & (f->block_size - 1)) != 0) {
                     throw std::runtime_error("bench attention: --kv-heads must divide --heads, --head-dim be a "
                                              "multiple of 8 and --block-size a power of two");
                   }
                   run_bench(*f);
                   return 0;
                 }});
}

}  // namespace slimkv
