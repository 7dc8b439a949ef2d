// The operator tools as a user runs them: plan, tune (its config is accepted by serve), profile and doctor.
#include <gtest/gtest.h>

#include <cstdio>

#include "server/server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

TEST(ToolsE2E, PlanReproducesTheSeedExampleAsJson) {
  int rc = 0;
  auto j = json::parse(run_tool("plan --layers 80 --heads 64 --head-dim 128 --vocab 32000 --params 70e9 --ctx 8192 "
                                "--batch 16 --json", &rc));
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(j[0]["before"]["kv_bytes"], int64_t{2} * 80 * 64 * 128 * 8192 * 2 * 16);
  EXPECT_EQ(j[0]["compressed"], false);
  run_tool("plan --layers 80 --heads 64 --head-dim 128 --ctx 8192 --kv-layer-compress-ratio 1,2", &rc);
  EXPECT_EQ(rc, 1) << "a ratio list of the wrong length is a clear error";
}

TEST(ToolsE2E, TuneWritesAConfigThatServeAccepts) {
  SKIP_IF_MISSING(default_model());
  const auto dir = std::filesystem::temp_directory_path() / ("slimkv-tune-" + std::to_string(::getpid()));
  int rc = 0;
  const std::string out = run_tool("tune --data " + data_dir() + "/tinystories_valid_head.txt --max-tokens 1024 -o " +
                                       (dir / "best.json").string(), &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("**(chosen)**"), std::string::npos) << out;
  for (const char* f : {"best.json", "best.md", "best.svg"}) EXPECT_TRUE(exists((dir / f).string())) << f;
  auto cfg = json::parse(std::ifstream(dir / "best.json"));
  EXPECT_TRUE(cfg.is_object());
  ServerProcess s({"--kv-config", (dir / "best.json").string()});
  auto r = s.post("/v1/completions", json{{"prompt", "Once upon a time"}, {"max_tokens", 8}});
  EXPECT_EQ(r.first, 200) << r.second;
  std::filesystem::remove_all(dir);
}

TEST(ToolsE2E, ProfileSplitsPrefillAndDecodeAndReportsTheSparseShare) {
  SKIP_IF_MISSING(default_model());
  int rc = 0;
  auto j = json::parse(run_tool("profile --num-prompts 4 --input-len 200 --output-len 40 --kv-sparse-mode dynamic "
                                "--kv-sparse-topk 64 --kv-recent-window 32 --kv-cache-memory 0.02 --json", &rc));
  EXPECT_EQ(rc, 0);
  for (const char* phase : {"prefill", "decode"}) {
    EXPECT_GT(j[phase]["total_s"].get<double>(), 0) << phase;
    double sum = 0;
    for (const auto& [name, v] : j[phase]["kinds"].items()) sum += v["share"].get<double>();
    EXPECT_NEAR(sum, 1.0, 0.02) << phase << ": the shares add up";
  }
  EXPECT_EQ(j["decode"]["tokens"].get<int64_t>() + j["prefill"]["tokens"].get<int64_t>(), 4 * 200 + 4 * 39);
  EXPECT_GT(j["decode"]["kinds"]["sparse: top-K selection + evict/merge"]["seconds"].get<double>(), 0);
  // The sparse share is the scoring + selection (+ indexer) kinds' share of decode time — positive, since the
  // selection above took time.
  const json& k = j["decode"]["kinds"];
  const double sparse_s = k["sparse: importance scoring"]["seconds"].get<double>() +
                          k["sparse: top-K selection + evict/merge"]["seconds"].get<double>() +
                          k["indexer (DeepSeek-V4's lightning indexer; select mode's row choice)"]["seconds"].get<double>();
  EXPECT_GT(j["decode"]["sparse_share"].get<double>(), 0);
  EXPECT_NEAR(j["decode"]["sparse_share"].get<double>(), sparse_s / j["decode"]["total_s"].get<double>(), 1e-9);
}

TEST(ToolsE2E, DoctorReadsAServerAndChecksAConfig) {
  SKIP_IF_MISSING(default_model());
  ServerProcess s;
  for (int i = 0; i < 3; ++i) s.post("/v1/completions", json{{"prompt", "Once upon a time"}, {"max_tokens", 8}});
  int rc = 0;
  auto j = json::parse(run_tool("doctor --json --base-url " + s.base_url(), &rc));
  EXPECT_EQ(rc, 0);
  bool saw_uncompressed = false;
  for (const auto& f : j["findings"]) saw_uncompressed |= f["symptom"] == "memory not down";
  EXPECT_TRUE(saw_uncompressed) << j.dump(2) << ": the server runs an uncompressed f32 cache";
  EXPECT_FALSE(j["checks"].empty());
  auto c = json::parse(run_tool("doctor --json --check-config --kv-sparse-mode dynamic --kv-sparse-topk 600 "
                                "--kv-recent-window 32", &rc));
  bool saw_noop = false;
  for (const auto& f : c["findings"]) saw_noop |= f["symptom"] == "sparse retention does nothing";
  EXPECT_TRUE(saw_noop) << c.dump(2);
}

TEST(ToolsE2E, LongContextBenchComparesConfigsInOneRun) {
  int rc = 0;
  const std::string cfg = repo_dir() + "/configs/";
  auto j = json::parse(run_tool("bench offline --synthetic llama-15m --context-len 300 --batch 2 --output-len 4 "
                                "--fill synthetic --threads 1 --json --config " + cfg + "int8.json " + cfg +
                                "int8-dynamic-k256-w128-merge.json", &rc));
  EXPECT_EQ(rc, 0);
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["fill"], "synthetic");
  EXPECT_DOUBLE_EQ(j["rows"][0]["speedup"].get<double>(), 1.0);
  for (const auto& r : j["rows"]) EXPECT_GT(r["decode_tokens_per_s"].get<double>(), 0) << r;
  EXPECT_EQ(j["rows"][0]["config"], "baseline (f16 cache)");
  // Peak KV: f16 rows against int8 rows (+ an fp16 scale per head) for the same blocks.
  EXPECT_NEAR(j["rows"][1]["kv_reduction"].get<double>(), 2.0 * 48 / (48 + 2), 0.05);
  EXPECT_GT(j["rows"][2]["sparse_share"].get<double>(), 0) << "dynamic retention evicts and is timed";
}

TEST(ToolsE2E, LongContextBenchWithRealPrefillTimesOnlyStepsWhereEverySequenceDecodes) {
  // Chunked prefill: the first sequences decode while the others prefill; the timed steps start when every one
  // has its first token, so each timed step yields one token per sequence: tokens/s x s/step = the batch.
  int rc = 0;
  auto j = json::parse(run_tool("bench offline --synthetic llama-15m --context-len 200 --batch 3 --output-len 4 "
                                "--max-num-batched-tokens 64 --threads 1 --json --config " + repo_dir() +
                                "/configs/int8.json", &rc));
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(j["fill"], "real");
  ASSERT_EQ(j["rows"].size(), 2u);
  for (const auto& r : j["rows"]) {
    EXPECT_NEAR(r["decode_tokens_per_s"].get<double>() * r["ms_per_step"].get<double>() / 1000.0, 3.0, 1e-6) << r;
  }
}

}  // namespace
}  // namespace slimkv::test
