// KV groups (vLLM's KVCacheSpec idea): layers with equal block-table behaviour share one block table per sequence,
// over one pool. A sliding-window group frees the blocks behind its window while a full group keeps its own;
// prefix hits need only the blocks a windowed group's next query sees; allocation is all or nothing over the
// groups; batched == single for a windowed model (Gemma 3) with and without compression; per-layer retention
// budgets (pyramid) make per-layer groups.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "engine_helpers.h"
#include "model/decoder_forward.h"

#include "model_helpers.h"

namespace slimkv::test {
namespace {

KvGroupSpec window(int32_t w) { return KvGroupSpec::window(w); }

TEST(KvGroups, LayoutGroupsLayersBySpecAndSharesTensorsAcrossGroups) {
  // Gemma 3's pattern: 5 local layers, 1 global: groups of min(5, 1) = 1 layer, one storage tensor for all.
  std::vector<KvLayerSpec> specs(6, KvLayerSpec{1, 64, 64, 16});
  specs[5].window_tokens = 0;
  const KvLayout l = KvLayout::from_specs(specs, 8);
  ASSERT_EQ(l.num_groups(), 6);
  EXPECT_EQ(l.num_tensors(), 1);
  EXPECT_EQ(l.bytes_per_block(), 8 * 2 * 64 * 4);  // one layer's K and V rows for 8 tokens
  // A uniform model: one group of every layer, a tensor per layer (the layout before groups existed).
  const KvLayout u = KvLayout::uniform(4, 2, 8, 16);
  ASSERT_EQ(u.num_groups(), 1);
  EXPECT_EQ(u.num_tensors(), 4);
  EXPECT_TRUE(u.uniform_full());
  // 10 local + 2 global: groups of 2 layers (5 local groups + 1 global), 2 tensors.
  std::vector<KvLayerSpec> s12(12, KvLayerSpec{2, 32, 32, 64});
  s12[5].window_tokens = s12[11].window_tokens = 0;
  const KvLayout g12 = KvLayout::from_specs(s12, 16);
  EXPECT_EQ(g12.num_groups(), 6);
  EXPECT_EQ(g12.num_tensors(), 2);
  for (const KvGroup& g : g12.groups) EXPECT_EQ(g.layers.size(), 2u);
}

TEST(KvGroups, WindowGroupFreesBlocksBehindItsWindowFullGroupKeepsThem) {
  KvCacheManager kv(32, 4, false, 1, {KvGroupSpec{}, window(8)});
  SeqKv s;
  std::vector<int32_t> toks(20, 5);
  ASSERT_TRUE(kv.allocate_slots(s, 20));
  EXPECT_EQ(kv.num_used_blocks(), 10);  // 5 per group
  kv.cache_full_blocks(s, toks, 20);    // the next query (position 20) sees 13..20: blocks 0-2 are never read again
  kv.check_integrity();
  EXPECT_EQ(kv.num_used_blocks(), 7);
  EXPECT_EQ(s.groups[0].blocks.size(), 5u);
  EXPECT_EQ(std::count(s.groups[1].blocks.begin(), s.groups[1].blocks.end(), -1), 3);
  EXPECT_EQ(KvCacheManager::held_blocks(s), 7);
  kv.free(s);
  kv.check_integrity();
  EXPECT_EQ(kv.num_used_blocks(), 0);
}

TEST(KvGroups, AllocationIsAllOrNothingOverTheGroups) {
  KvCacheManager kv(9, 4, false, 1, {KvGroupSpec{}, window(8)});
  SeqKv s;
  EXPECT_FALSE(kv.allocate_slots(s, 20));  // needs 10 blocks, 9 exist
  EXPECT_EQ(kv.num_used_blocks(), 0);
  ASSERT_TRUE(kv.allocate_slots(s, 16));
  EXPECT_EQ(kv.num_used_blocks(), 8);
  kv.free(s);
  kv.check_integrity();
}

TEST(KvGroups, PrefixHitNeedsOnlyTheWindowOfAWindowedGroup) {
  KvCacheManager kv(64, 4, true, 1, {KvGroupSpec{}, window(8)});
  std::vector<int32_t> toks(24);
  for (int i = 0; i < 24; ++i) toks[i] = 10 + i;
  SeqKv a;
  ASSERT_TRUE(kv.allocate_slots(a, 24));
  kv.cache_full_blocks(a, toks, 24);  // window group frees blocks 0-3 (they stay findable by hash)
  std::vector<int32_t> longer = toks;
  longer.push_back(99);
  PrefixHit hit = kv.find_cached_prefix(longer);
  EXPECT_EQ(hit.num_tokens, 24);
  ASSERT_EQ(hit.blocks.size(), 2u);
  EXPECT_EQ(hit.blocks[0], a.groups[0].blocks);  // the full group reuses every block
  // The query at position 24 sees 17..24: the window group needs blocks 4 and 5 only.
  EXPECT_EQ(hit.blocks[1], (std::vector<BlockId>{-1, -1, -1, -1, a.groups[1].blocks[4], a.groups[1].blocks[5]}));
  SeqKv b;
  ASSERT_TRUE(kv.allocate_slots(b, 25, &hit));
  kv.check_integrity();
  EXPECT_EQ(kv.pool().ref_count(a.groups[1].blocks[4]), 2);
  kv.free(a);
  kv.free(b);
  kv.check_integrity();
  EXPECT_EQ(kv.num_used_blocks(), 0);
}

// A hybrid model's cache (Qwen3-Next): a full-attention group and a recurrent-state group in a pool of its own
// (one block per sequence, the state spread over the block's records). The state is cached only as a snapshot
// at the prompt boundary: the step reaching it fills a spare block, registered under the prefix's hash once
// computed; a later prompt with that prefix hits exactly there and starts from the snapshot (kept until its first
// chunk has read it), never from the first request's live state.
TEST(KvGroups, RecurrentStateIsCachedBySnapshotAtThePromptBoundary) {
  std::vector<KvLayerSpec> specs = {KvLayerSpec{2, 16, 16, 0}, KvLayerSpec{}};
  specs[1].num_kv_heads = 1;
  specs[1].state_floats = 1000;
  specs[1].kind = KvRecordKind::State;
  const KvLayout layout = KvLayout::from_specs(specs, 4);
  ASSERT_EQ(layout.num_groups(), 2);
  ASSERT_EQ(layout.num_pools(), 2);
  EXPECT_EQ(layout.groups[1].spec.kind, KvGroupKind::Recurrent);
  EXPECT_EQ(layout.layers[1].k_head_bytes() * 4, 1000 * 4);  // one block = one state
  EXPECT_EQ(layout.blocks_for_sequence(400, 400, 1), 2);     // the live state + one transient
  KvCacheManager kv({64, 8}, 4, true, 1, group_specs(layout));
  std::vector<int32_t> toks(22);
  for (int i = 0; i < 22; ++i) toks[i] = 10 + i;
  const int32_t boundary = (22 - 1) / 4 * 4;  // 20: the prompt's full blocks, leaving one token
  SeqKv a;
  ASSERT_TRUE(kv.allocate_slots(a, 8, nullptr, 0, boundary));  // a first chunk short of the boundary: no snapshot
  EXPECT_EQ(a.groups[1].blocks.size(), 1u);
  EXPECT_LT(a.groups[1].snapshot_block, 0);
  kv.cache_full_blocks(a, toks, 8);
  ASSERT_TRUE(kv.allocate_slots(a, 22, nullptr, 0, boundary));  // this chunk computes token 19: a snapshot block
  const BlockId snap = a.groups[1].snapshot_block;
  ASSERT_GE(snap, 0);
  EXPECT_EQ(a.groups[1].snapshot_tokens, 20);
  EXPECT_EQ(KvCacheManager::held_blocks(a), 6 + 1 + 1);
  kv.cache_full_blocks(a, toks, 22);  // registered and let go (findable, unreferenced)
  EXPECT_LT(a.groups[1].snapshot_block, 0);
  EXPECT_EQ(kv.pool(1).num_used_blocks(), 1);
  kv.check_integrity();
  // The same prompt plus more: every full attention block is cached, but the state only after 20 tokens.
  std::vector<int32_t> longer = toks;
  longer.insert(longer.end(), {7, 7, 7, 7, 7});
  PrefixHit hit = kv.find_cached_prefix(longer);
  EXPECT_EQ(hit.num_tokens, 20);
  EXPECT_EQ(hit.blocks[1], (std::vector<BlockId>{snap}));
  SeqKv b;
  ASSERT_TRUE(kv.allocate_slots(b, 27, &hit, 0, (27 - 1) / 4 * 4));
  EXPECT_EQ(b.groups[1].state_source, snap);  // the first chunk reads the snapshot ...
  EXPECT_EQ(b.groups[1].state_source_tokens, 20);
  ASSERT_EQ(b.groups[1].blocks.size(), 1u);
  EXPECT_NE(b.groups[1].blocks[0], snap);      // ... and writes its own live state
  EXPECT_NE(b.groups[1].blocks[0], a.groups[1].blocks[0]);
  EXPECT_GE(b.groups[1].snapshot_block, 0);    // its own boundary (24) is a new snapshot
  kv.cache_full_blocks(b, longer, 27);
  EXPECT_LT(b.groups[1].state_source, 0);      // read: let go
  kv.check_integrity();
  kv.free(a);
  kv.free(b);
  kv.check_integrity();
  EXPECT_EQ(kv.num_used_blocks(), 0);
  // Without a prefix cache no snapshot is ever taken.
  KvCacheManager off({64, 8}, 4, false, 1, group_specs(layout));
  SeqKv c;
  ASSERT_TRUE(off.allocate_slots(c, 22, nullptr, 0, boundary));
  EXPECT_LT(c.groups[1].snapshot_block, 0);
  off.free(c);
  // A sequence declared computed past the boundary (a prefilled start) takes no snapshot: no chunk computes it.
  SeqKv d;
  ASSERT_TRUE(kv.allocate_slots(d, 21, nullptr, 21, boundary));
  ASSERT_TRUE(kv.allocate_slots(d, 22, nullptr, 0, boundary));
  EXPECT_LT(d.groups[1].snapshot_block, 0);
  kv.free(d);
  kv.check_integrity();
}

// Two recurrent groups share a pool: their snapshots are taken together or not at all (a hit needs both), and a
// pool of states is sized by running sequences, not by how many full-length sequences the budget holds.
TEST(KvGroups, RecurrentSnapshotsAreAllOrNoneAndStatePoolsAreSizedBySequences) {
  std::vector<KvLayerSpec> specs = {KvLayerSpec{}, KvLayerSpec{}, KvLayerSpec{2, 16, 16, 0}};
  for (int i = 0; i < 2; ++i) {
    specs[i].num_kv_heads = 1;
    specs[i].state_floats = 256;
    specs[i].kind = KvRecordKind::State;
  }
  const KvLayout layout = KvLayout::from_specs(specs, 4);
  ASSERT_EQ(layout.num_groups(), 3);
  const int32_t state_pool = layout.groups[0].spec.pool;
  std::vector<int32_t> blocks(layout.num_pools(), 64);
  blocks[state_pool] = 3;  // two live states and one spare: not enough for both snapshots
  KvCacheManager kv(blocks, 4, true, 1, group_specs(layout));
  SeqKv a;
  ASSERT_TRUE(kv.allocate_slots(a, 10, nullptr, 0, 8));
  EXPECT_LT(a.groups[0].snapshot_block, 0);
  EXPECT_LT(a.groups[1].snapshot_block, 0);
  EXPECT_EQ(kv.pool(state_pool).num_used_blocks(), 2);
  kv.free(a);
  // 4096-token sequences, a budget for about 3 of them, 64 running sequences: the state pool gets room for many
  // more than 3 (short requests need a state each and few token blocks).
  KvCacheConfig cfg;
  cfg.block_size = 4;
  const int64_t token_seq = layout.blocks_for_sequence(4096, 64, 1 - state_pool) * layout.bytes_per_block(1 - state_pool);
  const int64_t state_seq = layout.blocks_for_sequence(4096, 64, state_pool) * layout.bytes_per_block(state_pool);
  cfg.kv_cache_memory_gib = 3.0 * static_cast<double>(token_seq + state_seq) / (1 << 30);
  const std::vector<int32_t> pools = cfg.pool_blocks(layout, 4096, 64, 64);
  EXPECT_GT(pools[state_pool], 3 * layout.blocks_for_sequence(4096, 64, state_pool));
  EXPECT_LE(pools[state_pool] / 4, 64);  // 4 blocks a sequence (2 groups x live + transient), 64 sequences at most
  EXPECT_GE(pools[1 - state_pool], layout.blocks_for_sequence(4096, 64, 1 - state_pool));
  int64_t bytes = 0;
  for (int32_t p = 0; p < layout.num_pools(); ++p) bytes += pools[p] * layout.bytes_per_block(p);
  EXPECT_LE(bytes, static_cast<int64_t>(cfg.kv_cache_memory_gib * (1 << 30)) + 1);
}

TEST(KvGroups, PrefixHitShrinksWhenAWindowBlockWasReused) {
  KvCacheManager kv(14, 4, true, 1, {KvGroupSpec{}, window(8)});
  std::vector<int32_t> toks(24);
  for (int i = 0; i < 24; ++i) toks[i] = 10 + i;
  SeqKv a;
  ASSERT_TRUE(kv.allocate_slots(a, 24));
  kv.cache_full_blocks(a, toks, 24);
  const BlockId w5 = a.groups[1].blocks[5];
  kv.free(a);  // everything cached-evictable; tail first in the LRU
  SeqKv other;  // takes blocks from the front of the free queue: the window group's tail blocks go first
  ASSERT_TRUE(kv.allocate_slots(other, 4 * 4));
  std::vector<int32_t> longer = toks;
  longer.push_back(99);
  PrefixHit hit = kv.find_cached_prefix(longer);
  bool w5_reused = false;
  for (const auto& g : other.groups) w5_reused |= std::count(g.blocks.begin(), g.blocks.end(), w5) > 0;
  if (w5_reused) {
    EXPECT_LT(hit.num_tokens, 24);
  }
  for (int32_t g = 0; g < 2; ++g) {
    for (BlockId id : hit.blocks[g]) EXPECT_TRUE(id < 0 || kv.pool().is_cached(id));
  }
  kv.free(other);
  kv.check_integrity();
}

std::vector<TestRequest> gemma_jobs(int32_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> shared(60);
  for (auto& t : shared) t = 3 + static_cast<int32_t>(rng() % 509);
  std::vector<TestRequest> jobs;
  for (int32_t i = 0; i < n; ++i) {
    TestRequest j;
    const int32_t len = 1 + static_cast<int32_t>(rng() % 120);
    j.prompt.push_back(1);
    if (i % 3 == 0) j.prompt.insert(j.prompt.end(), shared.begin(), shared.begin() + std::min<int32_t>(len, 60));
    while (static_cast<int32_t>(j.prompt.size()) < len) j.prompt.push_back(3 + static_cast<int32_t>(rng() % 509));
    j.max_tokens = 1 + static_cast<int32_t>(rng() % 30);
    j.arrival_step = static_cast<int32_t>(rng() % 20);
    jobs.push_back(std::move(j));
  }
  return jobs;
}

const std::string kGemma = models_dir() + "/synthetic/gemma3/gemma3-f32.gguf";
const std::string kDeepseek = models_dir() + "/synthetic/deepseek2/deepseek2-v3-F32.gguf";
const std::string kDeepseek4 = models_dir() + "/synthetic/deepseek4/deepseek4-F32.gguf";

// (model, block size, chunk, tight memory): Gemma 3 (window groups), DeepSeek-V3 (MLA's latent cache) and
// DeepSeek-V4 (raw window, compressed entries and indexer keys in entry-counted blocks, compressor state windows).
class FamilyBatchedEqualsSingle
    : public ::testing::TestWithParam<std::tuple<std::string, int32_t, int32_t, bool>> {};

TEST_P(FamilyBatchedEqualsSingle, MixedRequestsWithPrefixHitsAndPreemption) {
  auto [path, bs, chunk, tight] = GetParam();
  SKIP_IF_MISSING(path);
  static std::map<std::string, std::unique_ptr<Model>> models;
  static std::map<std::string, std::vector<std::vector<int32_t>>> expected;
  static const auto jobs = gemma_jobs(12, 3);
  if (!models.count(path)) {
    models[path] = load(path);
    for (const auto& j : jobs) expected[path].push_back(greedy(*models[path], j.prompt, j.max_tokens));
  }
  const Model& m = *models[path];
  EngineConfig c = small_engine_config();
  c.cache.block_size = bs;
  c.sched.max_num_batched_tokens = chunk;
  c.sched.max_model_len = 256;
  if (tight) {  // room for one longest sequence and a little more: preemption
    const KvLayout layout = DecoderForward(m, nullptr).kv_layout(bs);
    int64_t bytes = 0;  // per block pool (one, or one per record size: DeepSeek-V4)
    for (int32_t p = 0; p < layout.num_pools(); ++p) {
      const int64_t slack = layout.num_pools() == 1 ? 24 : 2;
      bytes += (layout.blocks_for_sequence(256, chunk, p) + slack) * layout.bytes_per_block(p);
    }
    c.cache.kv_cache_memory_gib = static_cast<double>(bytes) / (1 << 30);
  }
  EngineRun r = run_requests(m, c, jobs);
  for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(r.tokens[i], expected[path][i]) << "job " << i;
  if (m.config.family == "gemma3") {
    EXPECT_GT(r.evicted_blocks, 0) << "window groups free their blocks";
  }
  if (!tight) {
    EXPECT_GT(r.metrics.prefix_hit_tokens, 0);
  } else {
    EXPECT_GT(r.metrics.num_preemptions, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    BlockChunkTight, FamilyBatchedEqualsSingle,
    ::testing::Values(std::tuple{kGemma, 4, 1, false}, std::tuple{kGemma, 4, 7, true}, std::tuple{kGemma, 4, 64, false},
                      std::tuple{kGemma, 8, 1, false}, std::tuple{kGemma, 8, 7, false}, std::tuple{kGemma, 8, 64, true},
                      std::tuple{kDeepseek, 4, 7, false}, std::tuple{kDeepseek, 8, 64, true},
                      std::tuple{kDeepseek, 16, 1, false}, std::tuple{kDeepseek4, 4, 7, false},
                      std::tuple{kDeepseek4, 8, 64, true}, std::tuple{kDeepseek4, 4, 1, false},
                      std::tuple{kDeepseek4, 4, 5, true}),
    [](const auto& info) {
      const std::string& p = std::get<0>(info.param);
      const std::string fam = p.find("gemma") != std::string::npos       ? "gemma3"
                              : p.find("deepseek4") != std::string::npos ? "deepseek4"
                                                                         : "deepseek2";
      return fmt::format("{}_bs{}_chunk{}_{}", fam, std::get<1>(info.param), std::get<2>(info.param),
                         std::get<3>(info.param) ? "tight" : "roomy");
    });

// An MLA model under compression: int8 (and int4) latent records with dynamic top-K + merge: batched == single, and
// the latent cache costs (kv_lora + rope) values per token and layer, no separate V.
TEST(KvGroups, LatentCacheCompressesAndStaysBatchedEqualToSingle) {
  SKIP_IF_MISSING(kDeepseek);
  auto m = load(kDeepseek);
  const KvLayout plain = DecoderForward(*m, nullptr).kv_layout(8);
  EXPECT_EQ(plain.layers[0].bytes_per_token(), (256 + 32) * 4);
  EXPECT_TRUE(plain.layers[0].v_in_k);
  for (const char* dtype : {"int8", "int4"}) {
    EngineConfig c = small_engine_config();
    c.sched.max_model_len = 512;
    c.compress.kv_cache_dtype = dtype;
    use_dynamic_retention(c, 48, 4, 16, true, 4);
    auto jobs = gemma_jobs(6, 5);
    for (auto& j : jobs) j.max_tokens = 40, j.arrival_step = 0;
    const EngineRun batched = run_requests(*m, c, jobs);
    EXPECT_GT(batched.evicted_blocks, 0);
    expect_each_alone_equal(*m, c, jobs, batched, dtype);
  }
  EngineConfig lr = small_engine_config();
  lr.sched.max_model_len = 512;
  lr.compress.kv_compression_rank = 16;
  lr.compress.kv_calibration = "x.calib";
  expect_engine_error<Engine>(*m, lr, "low-rank K/V does not apply to a latent (MLA) cache");
}

// DeepSeek-V4's natively compressed streams: one block pool per record size, pool bytes equal to the records'
// own; our storage compression composes (f16 / int8 with rotation on the window and the entries; indexer keys F16,
// compressor state F32) and stays batched == single; the model's own selection cannot be overridden by post-hoc
// retention or ratios.
TEST(KvGroups, DeepSeekV4StreamsComposeWithStorageCompression) {
  SKIP_IF_MISSING(kDeepseek4);
  auto m = load(kDeepseek4);
  const KvLayout plain = DecoderForward(*m, nullptr).kv_layout(8);
  EXPECT_GT(plain.num_pools(), 1);
  for (int32_t g = 0; g < plain.num_groups(); ++g) {
    for (int32_t l : plain.groups[g].layers) {
      EXPECT_EQ(plain.layers[l].spec.pool, plain.group_pool(g));
      if (plain.layers[l].kind == KvRecordKind::IndexKeys) {
        EXPECT_EQ(plain.layers[l].dtype, KvDtype::F16);
      }
    }
  }
  {  // a running sequence's blocks cost its records' bytes and no more (one pool per record size)
    EngineConfig c = small_engine_config();
    c.sched.max_model_len = 512;
    Engine e(*m, c);
    RequestParams p;
    p.max_tokens = 8;
    std::vector<int32_t> prompt(300, 7);
    prompt[0] = 1;
    ASSERT_TRUE(std::holds_alternative<RequestId>(e.add_request(prompt, p)));
    for (int i = 0; i < 3 && e.has_unfinished(); ++i) e.step();
    EXPECT_GT(e.record_bytes_in_use(), 0);
    EXPECT_EQ(e.kv_bytes_in_use(), e.record_bytes_in_use());
  }
  for (const char* dtype : {"f16", "int8"}) {
    EngineConfig c = small_engine_config();
    c.sched.max_model_len = 512;
    c.compress.kv_cache_dtype = dtype;
    c.cache.block_size = 4;
    const KvLayout lay = DecoderForward(*m, nullptr).kv_layout(4, c.compress);
    for (const KvLayerGeometry& g : lay.layers) {
      if (g.kind == KvRecordKind::State) {
        EXPECT_EQ(g.dtype, KvDtype::F32) << dtype;
      }
    }
    auto jobs = gemma_jobs(6, 5);
    for (auto& j : jobs) j.max_tokens = 40, j.arrival_step = 0;
    const EngineRun batched = run_requests(*m, c, jobs);
    expect_each_alone_equal(*m, c, jobs, batched, dtype);
  }
  EngineConfig bad = small_engine_config();
  bad.sched.max_model_len = 512;
  bad.compress.kv_sparse_mode = "dynamic";
  bad.compress.kv_sparse_topk = 64;
  bad.compress.kv_recent_window = 16;
  expect_engine_error<Engine>(*m, bad, "selects its compressed entries natively");
  EngineConfig ratio = small_engine_config();
  ratio.sched.max_model_len = 512;
  ratio.compress.kv_layer_compress_ratio = std::vector<int32_t>(12, 2);
  expect_engine_error<Engine>(*m, ratio, "cannot be overridden");
}

// Compression on a windowed model: a transform on the specs. The window layers keep their window; the global
// layer gets the retention; batched == single under int8 + dynamic top-K + merge.
TEST(KvGroups, CompressionTransformsOnlyTheFullAttentionLayersOfGemma3) {
  SKIP_IF_MISSING(kGemma);
  auto m = load(kGemma);
  EngineConfig c = small_engine_config();
  c.compress.kv_cache_dtype = "int8";
  c.compress.kv_sparse_mode = "dynamic";
  c.compress.kv_sparse_topk = 48;
  c.compress.kv_sink_tokens = 4;
  c.compress.kv_recent_window = 16;
  c.compress.kv_evict_policy = "merge";
  c.cache.block_size = 4;
  const KvLayout layout = DecoderForward(*m, nullptr).kv_layout(4, c.compress);
  for (int32_t l = 0; l < 6; ++l) {
    EXPECT_EQ(layout.layers[l].dtype, KvDtype::Int8);
    if (l == 5) {
      EXPECT_EQ(layout.layers[l].spec.dyn_topk_tokens, 48);
    } else {
      EXPECT_EQ(layout.layers[l].spec, window(16)) << l;
    }
  }
  auto jobs = gemma_jobs(8, 11);
  for (auto& j : jobs) j.max_tokens = 40, j.arrival_step = 0;
  const EngineRun batched = run_requests(*m, c, jobs);
  EXPECT_GT(batched.evicted_blocks, 0);
  expect_each_alone_equal(*m, c, jobs, batched);
  // Off is the uncompressed engine, bit for bit (here: token for token with the windows).
  EngineConfig off = small_engine_config();
  off.compress.enabled = false;
  EXPECT_EQ(run_requests(*m, off, jobs).tokens, run_requests(*m, small_engine_config(), jobs).tokens);
}

TEST(KvGroups, PyramidBudgetsKeepTheMeanAndFallWithDepth) {
  CompressionConfig cc;
  cc.kv_sparse_mode = "dynamic";
  cc.kv_sparse_topk = 256;
  cc.kv_sink_tokens = 4;
  cc.kv_recent_window = 60;
  cc.kv_sparse_schedule = "pyramid";
  const std::vector<KvLayerSpec> specs(5, KvLayerSpec{4, 8, 8, 0});
  const std::vector<int32_t> k = cc.layer_topk(specs);
  ASSERT_EQ(k.size(), 5u);
  int64_t sum = 0;
  for (size_t l = 0; l < k.size(); ++l) {
    sum += k[l];
    if (l > 0) {
      EXPECT_LT(k[l], k[l - 1]);
    }
    EXPECT_GE(k[l], 64);
  }
  EXPECT_EQ(sum, 5 * 256);
  EXPECT_EQ(k.front(), 64 + 288);  // 1.5x the selectable 192
  EXPECT_EQ(k.back(), 64 + 96);    // 0.5x
  const KvLayout l = cc.layout(specs, 8);
  EXPECT_EQ(l.num_groups(), 5) << "each budget is its own block table";
}

TEST(KvGroups, PyramidRetentionKeepsBatchedEqualToSingleAndMemoryBounded) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  EngineConfig c = small_engine_config();
  c.compress.kv_sparse_mode = "dynamic";
  c.compress.kv_sparse_topk = 96;
  c.compress.kv_sink_tokens = 4;
  c.compress.kv_recent_window = 32;
  c.compress.kv_sparse_schedule = "pyramid";
  c.compress.kv_evict_policy = "merge";
  const std::vector<TestRequest> jobs = patterned_requests(4, 100, 37, 31, 7, 120);
  const EngineRun batched = run_requests(*m, c, jobs);
  EXPECT_GT(batched.evicted_blocks, 0);
  expect_each_alone_equal(*m, c, jobs, batched);
  // Held per sequence: the budgets, not the context (5 layers, each its group, plus summaries).
  EXPECT_LT(batched.peak_blocks, 4 * (5 * (96 + 16) / 8 + 40));
}

TEST(KvGroups, SensitivityBudgetsGrowWithTheSquareRootOfSensitivityAndKeepTheTotal) {
  const std::vector<int32_t> k = allocate_by_sensitivity({0.04f, 0.01f, 0.0f}, 3 * 160, 16, 16);
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[0] + k[1] + k[2], 480);
  for (int32_t x : k) EXPECT_EQ(x % 16, 0);
  EXPECT_GT(k[0], k[1]);
  EXPECT_EQ(k[2], 16) << "an insensitive layer keeps the minimum";
  // sqrt(0.04) = 2 sqrt(0.01): the spare 432 tokens split about 2:1.
  EXPECT_NEAR(static_cast<double>(k[0] - 16) / (k[1] - 16), 2.0, 0.2);
}

}  // namespace
}  // namespace slimkv::test
