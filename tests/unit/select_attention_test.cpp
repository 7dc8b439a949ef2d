// Issue K: per-query sparse attention over a kept cache (kv_sparse_mode select). The row choice (sinks + window +
// the top-scored rows, fixed or adaptive budgets) on hand-made scores; the oracle scorer's scores are the true
// logits and pick the true top-k; a budget covering the context is dense attention bit for bit; batched == single
// with every scorer; the reads are the budget; the sketch index's entries equal a recomputation from the stored
// keys after prefix-cache hits.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include <unistd.h>

#include "compress/calibration.h"
#include "engine/engine.h"
#include "engine_helpers.h"
#include "core/half.h"
#include "kernels/index_page.h"
#include "kernels/isa.h"
#include "kernels/kv_codec.h"
#include "kernels/row_select.h"
#include "model/kv_projection.h"
#include "model/kv_streams.h"
#include "model_helpers.h"
#include "runner/teacher_forced.h"

namespace slimkv::test {
namespace {

std::vector<int32_t> picked(const std::vector<float>& scores, int64_t sinks, int64_t wbegin, int64_t budget) {
  std::vector<int32_t> rows(scores.size()), order(scores.size());
  rows.resize(pick_rows(scores.data(), static_cast<int64_t>(scores.size()), sinks, wbegin, budget, rows.data(),
                        order.data()));
  return rows;
}

TEST(RowSelect, SinksWindowAndTheTopScoresInPositionOrder) {
  //                          0  1  2    3  4  5    6    7  8  9
  const std::vector<float> s = {0, 0, 5, 1, 9, 3, 9, 0, 0, 0};
  // sinks [0, 2), window [8, 10), 3 of [2, 8): 4 and 6 (9, 9), then 2 (5)
  EXPECT_EQ(picked(s, 2, 8, 7), (std::vector<int32_t>{0, 1, 2, 4, 6, 8, 9}));
  EXPECT_EQ(picked(s, 2, 8, 5), (std::vector<int32_t>{0, 1, 4, 8, 9}));  // ties: the earlier row
  EXPECT_EQ(picked(s, 2, 8, 3), (std::vector<int32_t>{0, 1, 8, 9}));    // never fewer than sinks + window
  EXPECT_EQ(picked(s, 2, 8, 100).size(), 10u);
  EXPECT_EQ(select_budget(4096, 0, 0.0625, 4, 64), 256);
  EXPECT_EQ(select_budget(100, 0, 0.0625, 4, 64), 68);  // sinks + window at least
  EXPECT_EQ(select_budget(50, 300, 0, 4, 64), 50);
  EXPECT_EQ(select_budget(50, 0, 0, 4, 4), 50);  // no fixed budget: the whole context
}

TEST(RowSelect, AdaptiveBudgetsTakeTheFewestRowsReachingTheMass) {
  //                          0     1     2     3     4     5
  const std::vector<float> p = {0.10, 0.05, 0.40, 0.02, 0.30, 0.13};
  std::vector<int32_t> rows(6), order(6);
  auto pick = [&](double mass, int64_t cap) {
    std::vector<int32_t> r(rows.begin(), rows.begin() + pick_rows_by_mass(p.data(), 6, 1, 5, mass, cap, rows.data(),
                                                                           order.data()));
    return r;
  };
  EXPECT_EQ(pick(0.5, 6), (std::vector<int32_t>{0, 2, 5}));      // 0.23 fixed + 0.40 >= 0.5
  EXPECT_EQ(pick(0.8, 6), (std::vector<int32_t>{0, 2, 4, 5}));   // + 0.30
  EXPECT_EQ(pick(0.99, 6), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(pick(0.99, 3), (std::vector<int32_t>{0, 2, 5}));     // at most the budget
  // Two heads combined: the mean of their distributions (adaptive), or the largest (fixed budgets).
  const std::vector<float> logits = {0, 10, 0, 10, 0, 0};  // head 0 wants row 1, head 1 row 3 (stride 3)
  std::vector<float> out(3);
  combine_heads(logits.data(), 2, 3, 0, 3, 1.0f, true, out.data());
  EXPECT_NEAR(out[0] + out[1] + out[2], 1.0, 1e-6);
  EXPECT_GT(out[1], 0.49f);
  combine_heads(logits.data(), 2, 3, 0, 3, 1.0f, false, out.data());  // each head against its best row
  EXPECT_EQ(out, (std::vector<float>{0, 0, -10}));  // head 1's best is row 0 (its stride-3 view: {10, 0, 0})
}

TEST(RowSelect, TheOracleScoresAreTheTrueLogitsAndPickTheTrueTopK) {
  constexpr int32_t kDim = 16, kBlock = 4, kRows = 40;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> keys(static_cast<size_t>(kRows) * kDim), q(2 * kDim);
  for (float& x : keys) x = normal(rng);
  for (float& x : q) x = normal(rng);
  std::vector<int32_t> blocks = {7, 2, 9, 0, 5, 3, 1, 8, 4, 6};  // a scattered page table
  std::vector<float> storage(static_cast<size_t>(10 * kBlock) * kDim);
  for (int32_t j = 0; j < kRows; ++j) {
    std::memcpy(&storage[(static_cast<size_t>(blocks[j / kBlock]) * kBlock + j % kBlock) * kDim], &keys[j * kDim],
                sizeof(float) * kDim);
  }
  PagedKv kv;
  kv.k_base = reinterpret_cast<const uint8_t*>(storage.data());
  kv.block_ids = blocks.data();
  kv.block_size = kBlock;
  kv.k_row_bytes = kDim * 4;
  kv.k_dim = kDim;
  std::vector<float> scores(2 * kRows);
  score_key_rows(q.data(), 2, kDim, kv, 0, kRows, scores.data(), kRows);
  std::vector<float> best(kRows);
  for (int32_t j = 0; j < kRows; ++j) {
    for (int32_t h = 0; h < 2; ++h) {
      float s = 0;
      for (int32_t d = 0; d < kDim; ++d) s += q[h * kDim + d] * keys[j * kDim + d];
      EXPECT_FLOAT_EQ(scores[h * kRows + j], s);
    }
    best[j] = std::max(scores[j], scores[kRows + j]);
  }
  // One head: pick_rows' choice between the sinks and the window is the true top-k of that head's logits.
  std::vector<float> head0(scores.begin(), scores.begin() + kRows);
  const std::vector<int32_t> rows = picked(head0, 2, 36, 2 + 4 + 6);
  std::vector<int32_t> by_score(34);
  for (int32_t j = 0; j < 34; ++j) by_score[j] = 2 + j;
  std::sort(by_score.begin(), by_score.end(), [&](int32_t a, int32_t b) { return head0[a] > head0[b]; });
  std::vector<int32_t> want = {0, 1};
  std::vector<int32_t> top(by_score.begin(), by_score.begin() + 6);
  std::sort(top.begin(), top.end());
  want.insert(want.end(), top.begin(), top.end());
  for (int32_t j = 36; j < 40; ++j) want.push_back(j);
  EXPECT_EQ(rows, want);
}

// The ISA's index scorer over column-stored pages (index_page.h) equals the scalar reference on int8 and int4
// records, to the 12-bit query grid's precision (the query rounded as attention's is: within 2^-11 of the largest
// |q| x the row's sum of |values|), and the grid's integer arithmetic exactly: float(sum q_int x code) x (row scale x
// step), bit for bit — for block sizes of 8 and 16 rows, ranks 8 to 64, and 1 to 6 heads (chunks of 4 and the rest).
TEST(RowSelect, SketchScoresMatchTheScalarReference) {
  std::mt19937 rng(9);
  std::normal_distribution<float> normal;
  const DotKernels& k = dot_kernels(active_isa());
  if (!k.score_index) GTEST_SKIP() << "no index scorer on this machine's ISA";
  for (KvDtype dt : {KvDtype::Int8, KvDtype::Int4}) {
    for (int32_t rank : {8, 16, 32, 64}) {
      for (int32_t block : {8, 16}) {
        for (int32_t heads : {1, 3, 6}) {
          constexpr int32_t kRows = 61;
          const int64_t rec = kv_record_bytes(dt, rank, 0);
          std::vector<int32_t> blocks = {3, 0, 7, 1, 5, 2, 6, 4};
          std::vector<uint8_t> storage(static_cast<size_t>(8 * block) * rec), record(rec);
          std::vector<float> x(rank), q(static_cast<size_t>(heads) * rank);
          for (int32_t j = 0; j < kRows; ++j) {
            for (float& v : x) v = normal(rng);
            encode_kv_record(x.data(), rank, 0, dt, record.data());
            store_index_record(&storage[static_cast<size_t>(blocks[j / block]) * block * rec], block, rec, j % block,
                               record.data());
          }
          for (float& v : q) v = normal(rng);
          PagedKv index;
          index.k_base = storage.data();
          index.block_ids = blocks.data();
          index.block_size = block;
          index.k_row_bytes = rec;
          index.dtype = dt;
          index.k_dim = rank;
          std::vector<float> want(static_cast<size_t>(heads) * kRows), got(want.size(), -1.0f);
          score_sketch_rows(q.data(), heads, rank, index, 2, kRows, want.data(), kRows);
          ASSERT_TRUE(k.score_index(q.data(), heads, rank, index, 2, kRows, got.data(), kRows));
          std::vector<float> row(rank);
          for (int32_t j = 2; j < kRows; ++j) {
            int32_t at = 0;
            const uint8_t* page = index.k_page(j, &at);
            load_index_record(page, block, rec, at, record.data());
            decode_kv_record(record.data(), rank, 0, dt, row.data());
            uint16_t d16;
            std::memcpy(&d16, record.data(), 2);
            const float scale = fp16_to_fp32(d16);
            float l1 = 0;
            for (float v : row) l1 += std::fabs(v);
            for (int32_t h = 0; h < heads; ++h) {
              const float* qh = q.data() + h * rank;
              float qmax = 0;
              for (int32_t d = 0; d < rank; ++d) qmax = std::max(qmax, std::fabs(qh[d]));
              EXPECT_NEAR(got[h * kRows + j], want[h * kRows + j], qmax * l1 / 2048.0f + 1e-5f)
                  << kv_dtype_name(dt) << " rank " << rank << " row " << j;
              const float id = static_cast<float>(kQueryGridMax) / qmax;
              const float step = qmax / static_cast<float>(kQueryGridMax);
              int32_t dot = 0;  // the grid's integers against the codes (row / scale: the codes, exactly)
              for (int32_t d = 0; d < rank; ++d) {
                const int32_t code = static_cast<int32_t>(std::lround(row[d] / scale));
                dot += static_cast<int32_t>(std::nearbyint(qh[d] * id)) * code;
              }
              EXPECT_EQ(got[h * kRows + j], static_cast<float>(dot) * (scale * step))
                  << kv_dtype_name(dt) << " rank " << rank << " block " << block << " row " << j << " head " << h;
            }
          }
        }
      }
    }
  }
}

TEST(RowSelect, TheRadixSelectPicksWhatASortPicks) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> small(-5, 5);  // many ties
  std::normal_distribution<float> normal;
  for (int trial = 0; trial < 50; ++trial) {
    const int64_t n = 40 + trial * 37;
    std::vector<float> s(n);
    for (float& v : s) v = trial % 2 ? static_cast<float>(small(rng)) : normal(rng) * 1e3f;
    const int64_t sinks = 3, wbegin = n - 10, budget = 13 + trial * 5;
    std::vector<int32_t> want;
    for (int64_t j = 0; j < sinks; ++j) want.push_back(static_cast<int32_t>(j));
    std::vector<int32_t> mid;
    for (int64_t j = sinks; j < wbegin; ++j) mid.push_back(static_cast<int32_t>(j));
    std::stable_sort(mid.begin(), mid.end(), [&](int32_t a, int32_t b) { return s[a] > s[b]; });
    mid.resize(std::min<size_t>(mid.size(), static_cast<size_t>(std::max<int64_t>(0, budget - sinks - 10))));
    std::sort(mid.begin(), mid.end());
    want.insert(want.end(), mid.begin(), mid.end());
    for (int64_t j = wbegin; j < n; ++j) want.push_back(static_cast<int32_t>(j));
    EXPECT_EQ(picked(s, sinks, wbegin, budget), want) << "trial " << trial;
    // The ISA's fused choice (combine + pick) gives the reference's rows, one head or several.
    const DotKernels& k = dot_kernels(active_isa());
    if (!k.pick_top_rows) continue;
    for (int32_t heads : {1, 3}) {
      std::vector<float> hs(static_cast<size_t>(heads) * n);
      for (float& v : hs) v = trial % 2 ? static_cast<float>(small(rng)) : normal(rng);
      std::vector<float> combined(n);
      combine_heads(hs.data(), heads, n, sinks, wbegin, 0.125f, false, combined.data());
      std::vector<int32_t> rows(n), keys(n);
      rows.resize(k.pick_top_rows(hs.data(), heads, n, n, sinks, wbegin, 0.125f, budget, rows.data(),
                                  reinterpret_cast<uint32_t*>(keys.data())));
      EXPECT_EQ(rows, picked(combined, sinks, wbegin, budget)) << "trial " << trial << " heads " << heads;
    }
  }
  const DotKernels& k = dot_kernels(active_isa());
  if (!k.pick_top_rows) return;
  for (const int64_t big : {int64_t{5000}, int64_t{20003}}) {  // past 4,096 keys: the four-way histogram
    std::vector<float> hs(2 * big);
    for (float& v : hs) v = normal(rng);
    std::vector<float> combined(big);
    combine_heads(hs.data(), 2, big, 4, big - 64, 0.125f, false, combined.data());
    std::vector<int32_t> rows(big), keys(big);
    rows.resize(k.pick_top_rows(hs.data(), 2, big, big, 4, big - 64, 0.125f, big / 16, rows.data(),
                                reinterpret_cast<uint32_t*>(keys.data())));
    EXPECT_EQ(rows, picked(combined, 4, big - 64, big / 16)) << big << " rows";
  }
  // Every score equal (no bit to search): the earliest rows.
  const int64_t n = 100;
  std::vector<float> flat(n, 0.5f);
  std::vector<int32_t> rows(n), keys(n);
  rows.resize(k.pick_top_rows(flat.data(), 1, n, n, 2, n - 4, 0.125f, 20, rows.data(),
                              reinterpret_cast<uint32_t*>(keys.data())));
  EXPECT_EQ(rows, picked(flat, 2, n - 4, 20));
}

// stories260K through the engine's KV path, one token at a time: every position's logits.
std::vector<float> teacher_forced_logits(const Model& m, const CompressionConfig& cc, const std::vector<int32_t>& ids,
                                         PagedAttention::ReadStats* reads = nullptr) {
  TeacherForcedRun run(m, nullptr, cc, static_cast<int32_t>(ids.size()), 8);
  std::vector<float> out(ids.size() * m.config.vocab_size);
  for (size_t t = 0; t < ids.size(); ++t) run.step(ids[t], out.data() + t * m.config.vocab_size);
  if (reads) *reads = run.read_stats();
  return out;
}

std::vector<int32_t> text_ids(const Model& m, size_t n) {
  auto ids = m.tokenizer->encode(read_text_file(data_dir() + "/tinystories_valid_head.txt").substr(0, 6000), true);
  ids.resize(std::min(ids.size(), n));
  return ids;
}

// A calibration of stories260K's keys on a few hundred tokens of text (the sketch's principal directions).
std::string calibrate_k260(const Model& m, const std::string& name) {
  SequenceForward fwd(m, nullptr, 512);
  KvCovariance cov(m.config.num_layers, m.config.num_kv_heads, m.config.head_dim);
  fwd.forward_pass().set_kv_observer([&](int32_t l, const float* k, const float* v, int32_t T) { cov.add(l, k, v, T); });
  auto ids = m.tokenizer->encode(read_text_file(data_dir() + "/tinystories_valid_head.txt").substr(6000, 4000), true);
  ids.resize(std::min<size_t>(ids.size(), 400));
  std::vector<float> logits(m.config.vocab_size);
  fwd.forward(ids, 0, false, logits.data());
  const std::string path = ::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid()) + ".calib";
  Calibration::from_covariance(cov, model_fingerprint(m)).save(path);
  return path;
}

CompressionConfig select_cc(const char* scorer, double fraction, int32_t topk = 0) {
  CompressionConfig cc;
  cc.kv_sparse_mode = "select";
  cc.kv_select_index = scorer;
  cc.kv_select_fraction = fraction;
  cc.kv_sparse_topk = topk;
  cc.kv_sink_tokens = 4;
  cc.kv_recent_window = 16;
  if (std::string(scorer) == "sketch") cc.kv_select_rank = 4;  // of stories260K's head dim 8
  return cc;
}

TEST(SelectAttention, ABudgetCoveringTheContextIsDenseAttentionBitForBit) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  const auto ids = text_ids(*m, 300);
  CompressionConfig dense;  // the same f32 cache, no selection
  dense.kv_cache_dtype = "f32";
  const std::vector<float> want = teacher_forced_logits(*m, dense, ids);
  for (const char* scorer : {"oracle", "pages"}) {
    PagedAttention::ReadStats reads;
    const std::vector<float> got = teacher_forced_logits(*m, select_cc(scorer, 0, 100000), ids, &reads);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << scorer;
    EXPECT_EQ(reads.rows_read, reads.rows_visible);
  }
  // A budget under the context changes the output, and reads what it says.
  PagedAttention::ReadStats reads;
  const std::vector<float> sparse = teacher_forced_logits(*m, select_cc("oracle", 0.25), ids, &reads);
  EXPECT_NE(std::memcmp(sparse.data(), want.data(), want.size() * sizeof(float)), 0);
  EXPECT_LT(reads.rows_read, reads.rows_visible / 2);
  EXPECT_GT(reads.read_fraction_sum / reads.items, 0.25);  // short contexts read sinks + window whole
  EXPECT_LT(reads.read_fraction_sum / reads.items, 0.5);
}

TEST(SelectAttention, BatchedEqualsSingleWithEveryScorer) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  const std::string calib = calibrate_k260(*m, "select_batched");
  std::vector<std::vector<int32_t>> ps;
  for (int i = 0; i < 5; ++i) {
    std::vector<int32_t> p = {1};
    for (int j = 0; j < 60 + 57 * i; ++j) p.push_back(3 + (j * 13 + i * 7) % 509);
    ps.push_back(p);
  }
  for (const char* scorer : {"sketch", "oracle", "pages"}) {
    EngineConfig c = small_engine_config();
    c.compress = select_cc(scorer, 0.25);
    c.compress.kv_calibration = calib;
    if (std::string(scorer) == "oracle") c.compress.kv_select_mass = 0.9;  // adaptive budgets too
    const EngineRun batched = run_prompts(*m, c, ps, 40);
    for (size_t i = 0; i < ps.size(); ++i) {
      EngineConfig one = c;
      one.sched.max_num_seqs = 1;
      one.sched.max_num_batched_tokens = 13;
      one.cache.enable_prefix_caching = false;
      EXPECT_EQ(run_prompts(*m, one, {ps[i]}, 40).tokens[0], batched.tokens[i]) << scorer << " prompt " << i;
    }
  }
  std::remove(calib.c_str());
}

TEST(SelectIndex, EntriesEqualARecomputationFromTheStoredKeysAfterPrefixHits) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  const std::string calib = calibrate_k260(*m, "select_index");
  EngineConfig c = small_engine_config();
  c.compress = select_cc("sketch", 0.25);
  c.compress.kv_calibration = calib;
  c.compress.kv_cache_dtype = "f32";  // the keys stored exactly: the sketch recomputed from them is the written one
  Engine e(*m, c);
  std::vector<int32_t> prompt = {1};
  for (int j = 0; j < 150; ++j) prompt.push_back(3 + (j * 11) % 509);
  RequestParams p;
  p.ignore_eos = true;
  p.max_tokens = 4;
  ASSERT_TRUE(std::holds_alternative<RequestId>(e.add_request(prompt, p)));
  while (e.has_unfinished()) e.step();
  std::vector<int32_t> longer = prompt;
  for (int j = 0; j < 40; ++j) longer.push_back(5 + j);
  p.max_tokens = 100;
  const RequestId id = std::get<RequestId>(e.add_request(longer, p));
  e.step();
  e.step();
  e.step();
  const Request* r = e.find_request(id);
  ASSERT_NE(r, nullptr);
  EXPECT_GT(r->num_cached_tokens, 100);  // the prompt's blocks came from the prefix cache
  const KvLayout& layout = e.kv_layout();
  const Calibration cal = Calibration::load(calib);
  const int32_t bs = layout.block_size_tokens;
  int64_t checked = 0;
  for (int32_t l = 0; l < layout.num_layers(); ++l) {
    const KvLayerGeometry& g = layout.layers[l];
    const int32_t xs = layout.appended_stream(l, KvRecordKind::SelectIndex);
    if (xs < 0) continue;
    const KvLayerGeometry& x = layout.layers[xs];
    const std::vector<float> basis = cal.key_basis(l, x.k_dim);  // [heads, rank, head_dim]
    const auto& main_blocks = r->kv.groups[g.group].blocks;
    const auto& index_blocks = r->kv.groups[x.group].blocks;
    for (int32_t t = 0; t < r->num_computed_tokens; ++t) {
      for (int32_t h = 0; h < g.num_kv_heads; ++h) {
        const float* key = reinterpret_cast<const float*>(
            e.storage().k_head(l, static_cast<int64_t>(main_blocks[t / bs]) * bs + t % bs, h));
        std::vector<float> sketch(x.k_dim);
        for (int32_t q = 0; q < x.k_dim; ++q) {
          float acc = 0;
          for (int32_t d = 0; d < g.head_dim_k; ++d) acc += basis[(static_cast<size_t>(h) * x.k_dim + q) * g.head_dim_k + d] * key[d];
          sketch[q] = acc;
        }
        std::vector<uint8_t> want(x.k_head_bytes());
        encode_kv_record(sketch.data(), x.k_dim, 0, KvDtype::Int8, want.data());
        std::vector<uint8_t> got(want.size());  // from its page's columns (index_page.h)
        load_index_record(e.storage().k_head(xs, static_cast<int64_t>(index_blocks[t / bs]) * bs, h), bs,
                          x.k_head_bytes(), t % bs, got.data());
        ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0)
            << "layer " << l << " token " << t << " head " << h;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
  std::remove(calib.c_str());
}

// The query-aware sketch: at full rank AᵀB is the identity (q·k exactly); at a lower rank its error on q·k over
// the calibration's own queries and keys is below a plain PCA sketch's (which ignores where the queries point).
TEST(SelectIndex, TheQueryAwareSketchApproximatesQDotKBetterThanPca) {
  constexpr int32_t D = 8, N = 4000;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  KvCovariance cov(1, 1, D);
  std::vector<float> qs(static_cast<size_t>(N) * D), ks(static_cast<size_t>(N) * D), zero(D, 0.0f);
  for (int32_t t = 0; t < N; ++t) {
    for (int32_t d = 0; d < D; ++d) {
      ks[t * D + d] = normal(rng) * (d < 4 ? 3.0f : 1.0f);  // keys vary most in dims 0..3 ...
      qs[t * D + d] = normal(rng) * (d >= 4 ? 3.0f : 0.3f);  // ... the queries look along 4..7
    }
    cov.add(0, &ks[t * D], zero.data(), 1);
    cov.add_queries(0, &qs[t * D], 1, 1);
  }
  const Calibration cal = Calibration::from_covariance(cov, "test");
  auto mse = [&](const std::vector<float>& a, const std::vector<float>& b, int32_t rank) {
    double e = 0;
    for (int32_t t = 0; t < N; ++t) {
      double exact = 0, approx = 0;
      for (int32_t d = 0; d < D; ++d) exact += qs[t * D + d] * ks[((t + 7) % N) * D + d];
      for (int32_t r = 0; r < rank; ++r) {
        double aq = 0, bk = 0;
        for (int32_t d = 0; d < D; ++d) aq += a[r * D + d] * qs[t * D + d], bk += b[r * D + d] * ks[((t + 7) % N) * D + d];
        approx += aq * bk;
      }
      e += (exact - approx) * (exact - approx);
    }
    return e / N;
  };
  std::vector<float> a, b;
  cal.query_aware_sketch(0, D, a, b);
  EXPECT_LT(mse(a, b, D), 1e-6);
  cal.query_aware_sketch(0, 4, a, b);
  const std::vector<float> pca = cal.key_basis(0, 4);
  EXPECT_LT(mse(a, b, 4), 0.5 * mse(pca, pca, 4));
}

TEST(SelectAttention, ConfigErrorsAreClear) {
  auto expect_error = [](CompressionConfig cc, const std::string& words) {
    try {
      cc.validate(4, 64);
      ADD_FAILURE() << "accepted: " << words;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  CompressionConfig cc = select_cc("sketch", 0.25);
  expect_error(cc, "--kv-calibration");  // the sketch needs the keys' principal directions
  expect_error(select_cc("oracle", 0), "needs a budget");
  CompressionConfig bad = select_cc("oracle", 1.5);
  expect_error(bad, "--kv-select-fraction");
  CompressionConfig off;
  off.kv_select_fraction = 0.25;
  expect_error(off, "need --kv-sparse-mode select");
  CompressionConfig res = select_cc("oracle", 0.25);
  res.kv_cache_dtype = "tq4";
  res.kv_residual_tokens = 64;  // wider than the recent window (16)
  expect_error(res, "must cover --kv-residual-tokens");
}

}  // namespace
}  // namespace slimkv::test
