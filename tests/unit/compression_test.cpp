// KV compression (issue C, quantization part): off is bit-identical to the uncompressed engine; each storage
// dtype keeps integrity after every step, batched == single per config, physical bytes shrink; config errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <unistd.h>

#include "engine/engine.h"
#include "engine_helpers.h"
#include "model_helpers.h"

namespace slimkv::test {
namespace {


using Job = TestRequest;

std::vector<Job> jobs(int32_t n) {
  std::mt19937 rng(17);
  std::vector<Job> out;
  for (int32_t i = 0; i < n; ++i) {
    Job j{{1}, 1 + static_cast<int32_t>(rng() % 30)};
    int32_t len = 1 + static_cast<int32_t>(rng() % 300);
    while (static_cast<int32_t>(j.prompt.size()) < len) j.prompt.push_back(3 + static_cast<int32_t>(rng() % 509));
    out.push_back(std::move(j));
  }
  return out;
}


std::vector<std::vector<int32_t>> run_engine(const Model& m, const EngineConfig& cfg, const std::vector<Job>& js) {
  return run_requests(m, cfg, js).tokens;
}

// "int8", or "int8/tq4": keys / values (asymmetric bits, --kv-cache-dtype-v).
EngineConfig cfg_with(const std::string& dtype, bool enabled = true) {
  EngineConfig c = small_engine_config();
  c.compress.enabled = enabled;
  const size_t slash = dtype.find('/');
  c.compress.kv_cache_dtype = dtype.substr(0, slash);
  if (slash != std::string::npos) c.compress.kv_cache_dtype_v = dtype.substr(slash + 1);
  return c;
}

// Stored bytes per head of 8 values (stories260K): f32 32, f16 16, int8 2 + 8, int4 / tq4 2 + 4, tq3 2 + 3.
double head_bytes(const std::string& dtype) {
  return dtype == "f16" ? 16 : dtype == "int8" ? 10 : dtype == "tq3" ? 5 : dtype == "f32" ? 32 : 6;
}

TEST(Compression, OffIsBitIdenticalToTheUncompressedEngine) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  auto js = jobs(12);
  auto a = run_engine(*m, small_engine_config(), js);
  auto b = run_engine(*m, cfg_with("int4", /*enabled=*/false), js);
  EXPECT_EQ(a, b);
  for (size_t i = 0; i < js.size(); ++i) EXPECT_EQ(a[i], greedy(*m, js[i].prompt, js[i].max_tokens));
}

class PerDtype : public ::testing::TestWithParam<std::string> {};

TEST_P(PerDtype, BatchedEqualsSingleAndIntegrityHoldsEveryStep) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  auto js = jobs(12);
  EngineConfig c = cfg_with(GetParam());
  auto batched = run_engine(*m, c, js);
  for (size_t i = 0; i < js.size(); ++i) {
    EngineConfig one = c;
    one.sched.max_num_seqs = 1;
    auto single = run_engine(*m, one, {js[i]});
    EXPECT_EQ(batched[i], single[0]) << GetParam() << " job " << i;
  }
}

TEST_P(PerDtype, PhysicalBytesPerTokenShrinkAndMoreBlocksFitTheSameMemory) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  Engine plain(*m, cfg_with("f32"));
  Engine comp(*m, cfg_with(GetParam()));
  const double ratio = static_cast<double>(comp.kv_layout().bytes_per_token()) / plain.kv_layout().bytes_per_token();
  const std::string& p = GetParam();
  const size_t slash = p.find('/');
  const double expected = (head_bytes(p.substr(0, slash)) +
                           head_bytes(slash == std::string::npos ? p : p.substr(slash + 1))) / 64.0;
  EXPECT_NEAR(ratio, expected, 1e-9);
  EXPECT_NEAR(static_cast<double>(comp.kv_manager().num_blocks()) / plain.kv_manager().num_blocks(), 1 / ratio, 0.01);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, PerDtype,
                         ::testing::Values("f16", "int8", "int4", "tq4", "tq3", "int8/tq4", "tq4/int8", "int8/f16"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '/', '_');
                           return n;
                         });

// tq4 + a residual window of the last R tokens at int8 (--kv-residual-tokens, KIVI).
EngineConfig residual_cfg(int32_t tokens) {
  EngineConfig c = cfg_with("tq4");
  c.compress.kv_residual_tokens = tokens;
  return c;
}

TEST(ResidualWindow, BatchedEqualsSingleOverPromptsLongerThanTheWindow) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  auto js = jobs(12);  // prompts of 1..300 tokens, chunks of 64: the window (24) splits within and across chunks
  const EngineConfig c = residual_cfg(24);
  auto batched = run_engine(*m, c, js);
  for (size_t i = 0; i < js.size(); ++i) {
    EngineConfig one = c;
    one.sched.max_num_seqs = 1;
    EXPECT_EQ(batched[i], run_engine(*m, one, {js[i]})[0]) << "job " << i;
  }
}

TEST(ResidualWindow, AWindowLongerThanEverySequenceIsExactlyTheWindowsDtype) {
  // Every row a query sees is then read from the int8 window: the tq4 rows are written but never read, and the
  // merge's weight for the window is exactly 1 — the tokens equal an int8 cache's.
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  auto js = jobs(8);
  EXPECT_EQ(run_engine(*m, residual_cfg(512), js), run_engine(*m, cfg_with("int8"), js));
  EXPECT_NE(run_engine(*m, residual_cfg(8), js), run_engine(*m, cfg_with("int8"), js));  // a short one is not
}

TEST(ResidualWindow, LayoutKeepsEveryTokenAtTheMainDtypeAndOnlyTheWindowAtItsOwn) {
  CompressionConfig cc;
  cc.kv_cache_dtype = "tq4";
  cc.kv_residual_tokens = 100;
  cc.kv_residual_dtype = "f16";
  const KvLayout l = cc.layout(/*num_layers=*/3, /*num_kv_heads=*/2, /*head_dim=*/64, /*block_size=*/16);
  ASSERT_EQ(l.num_layers(), 6);
  EXPECT_EQ(l.num_model_streams(), 3);
  EXPECT_EQ(l.num_pools(), 2);  // a block of either record size costs only its own bytes
  for (int32_t i = 0; i < 3; ++i) {
    const KvLayerGeometry &g = l.layers[i], &r = l.layers[3 + i];
    EXPECT_EQ(g.dtype, KvDtype::Tq4);
    EXPECT_EQ(l.appended_stream(i, KvRecordKind::Residual), 3 + i);
    EXPECT_EQ(g.residual_tokens, 100);
    EXPECT_EQ(r.kind, KvRecordKind::Residual);
    EXPECT_EQ(r.dtype, KvDtype::F16);
    EXPECT_EQ(r.rotate, g.rotate);  // one query basis for both walks
    EXPECT_EQ(r.spec.kind, KvGroupKind::Window);
    EXPECT_EQ(r.spec.window_tokens, 100);
    EXPECT_NE(g.spec.pool, r.spec.pool);
  }
  // A sequence of 4096 tokens in chunks of 512 holds all its tokens at tq4 and at most window + chunk at f16 (a
  // block id holds a group's layers: one group each here).
  const int32_t main_pool = l.layers[0].spec.pool, window_pool = l.layers[3].spec.pool;
  EXPECT_EQ(l.blocks_for_sequence(4096, 512, main_pool), 4096 / 16);
  EXPECT_EQ(l.blocks_for_sequence(4096, 512, window_pool), (100 + 512 + 15) / 16 + 1);
  EXPECT_NE(cc.fingerprint(), [] { CompressionConfig t; t.kv_cache_dtype = "tq4"; return t.fingerprint(); }());
}

TEST(Compression, QuantizedCacheTracksTheFullCacheOnRealText) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  auto g = golden()["stories260K"];
  auto prompt = g["prompt_ids"].get<std::vector<int32_t>>();
  auto want = g["greedy_40_ids"].get<std::vector<int32_t>>();
  for (const char* dt : {"f16", "int8"}) {
    GenerateOptions o;
    o.max_new_tokens = 40;
    o.stop_at_eos = false;
    o.compression.kv_cache_dtype = dt;
    std::vector<int32_t> out;
    generate(*m, nullptr, prompt, o, [&](int32_t id) { out.push_back(id); return true; });
    EXPECT_EQ(out, want) << dt;  // the golden path has a 0.133 logit margin: 8-bit storage keeps it
  }
}

TEST(Compression, ConfigErrorsAreClear) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  auto expect_error = [&](const EngineConfig& c, const std::string& needle) {
    expect_engine_error<Engine>(*m, c, needle);
  };
  // A choice is parsed where it is set: a bad spelling is refused there, naming the flag and every choice.
  auto expect_refused = [](auto set, const std::string& needle) {
    try {
      set();
      ADD_FAILURE() << "expected an error containing " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_refused([] { cfg_with("int3"); }, "--kv-cache-dtype must be one of auto, f32, f16, int8, int4, tq4, tq3 (got 'int3')");
  EngineConfig c = cfg_with("int8");
  expect_refused([&] { c.compress.kv_quant_rotation = "walsh"; }, "--kv-quant-rotation must be one of");
  // Flags and JSON go through the field table: the values' dtype names its own flag, not the keys'.
  const auto& fields = compression_fields();
  const auto v_field = std::find_if(fields.begin(), fields.end(),
                                    [](const CompressionField& f) { return std::string(f.key) == "kv_cache_dtype_v"; });
  ASSERT_NE(v_field, fields.end());
  {
    const CompressionField& f = *v_field;
    expect_refused([&] { f.set(c.compress, "int3"); }, "--kv-cache-dtype-v must be one of auto, f32, f16, int8");
    f.set(c.compress, "tq4");
    EXPECT_EQ(c.compress.v_dtype(), KvDtype::Tq4);
    EXPECT_EQ(c.compress.dtype(), KvDtype::Int8);
  }
  EngineConfig unrotated = cfg_with("tq3");
  unrotated.compress.kv_quant_rotation = "none";
  expect_error(unrotated, "--kv-cache-dtype tq3 needs the Hadamard rotation");
  std::string path = ::testing::TempDir() + "/kvcfg_" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << R"({"kv_cache_dtype": "int8", "kv_sparse_budget": 3})";
  c = cfg_with("f32");
  c.kv_config_file = path;
  expect_error(c, "unknown or not yet supported key 'kv_sparse_budget'");
  std::ofstream(path) << R"({"kv_evict_policy": "merge", "kv_sparse_mode": "static", "kv_recent_window": 64})";
  expect_error(c, "--kv-evict-policy merge needs --kv-sparse-mode dynamic");
  std::ofstream(path) << R"({"kv_evict_policy": "average"})";
  expect_error(c, "--kv-evict-policy must be one of drop, merge (got 'average')");
  std::ofstream(path) << R"({"kv_sparse_schedule": "pyramid"})";
  expect_error(c, "--kv-sparse-schedule pyramid needs --kv-sparse-mode dynamic");
  std::ofstream(path) << R"({"kv_sparse_schedule": "triangle", "kv_sparse_mode": "dynamic"})";
  expect_error(c, "--kv-sparse-schedule must be one of uniform, pyramid, auto");
  std::ofstream(path) << R"({"kv_residual_tokens": 64, "kv_sparse_mode": "static", "kv_recent_window": 64})";
  expect_error(c, "--kv-residual-tokens: a residual window keeps every token (at two precisions); it does not "
                  "combine with --kv-sparse-mode static");
  std::ofstream(path) << R"({"kv_residual_tokens": -2})";
  expect_error(c, "--kv-residual-tokens must be in 0..1048576 (got -2)");
  std::ofstream(path) << R"({"kv_residual_dtype": "int2"})";
  expect_error(c, "--kv-residual-dtype must be one of auto, f32, f16, int8");
  {
    CompressionConfig latent;
    latent.kv_residual_tokens = 64;
    KvLayerSpec mla{1, 576, 512, 0, /*v_in_k=*/true};
    expect_refused([&] { latent.validate(std::vector<KvLayerSpec>{mla}); },
                   "--kv-residual-tokens: layer 0 is not plain attention");
  }
  std::ofstream(path) << R"([1, 2])";
  expect_error(c, "must be a JSON object");
  std::ofstream(path) << R"({"kv_cache_dtype": "int4"})";
  Engine ok(*m, c);
  EXPECT_EQ(ok.kv_layout().layers[0].dtype, KvDtype::Int4);
  std::filesystem::remove(path);
}

TEST(Compression, PrefixCacheNeverSharesBlocksAcrossConfigs) {
  // The salt includes the compression fingerprint: the same tokens hash differently under another dtype.
  CompressionConfig a, b;
  b.kv_cache_dtype = "int8";
  EXPECT_NE(a.fingerprint(), b.fingerprint());
  CompressionConfig off;
  off.enabled = false;
  off.kv_cache_dtype = "int4";
  EXPECT_EQ(off.fingerprint(), a.fingerprint());  // off == plain f32, so sharing is correct
}

}  // namespace
}  // namespace slimkv::test
