// Runs the real `slimkv` binary: exact stdout for generate, one-line errors with non-zero exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "test_paths.h"

namespace slimkv::test {
namespace {

struct Result {
  int exit_code;
  std::string out, err;
};

Result run(const std::string& args) {
  static int counter = 0;  // tests run as parallel processes: one stderr file per process and call
  std::string err_path = ::testing::TempDir() + "/slimkv_cli_err_" + std::to_string(::getpid()) + "_" +
                         std::to_string(counter++) + ".txt";
  std::string cmd = std::string(SLIMKV_BINARY) + " " + args + " 2>" + err_path;
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = ::pclose(p);
  std::ifstream e(err_path);
  std::string err((std::istreambuf_iterator<char>(e)), {});
  std::remove(err_path.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, err};
}

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(Cli, GenerateDefaultModelPrintsPromptAndGoldenContinuationOnly) {
  SKIP_IF_MISSING(models_dir() + "/stories260K/stories260K.bin");
  Result r = run("generate -p 'Once upon a time' -n 40");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she "
            "saw a big, red ball.\n");
  EXPECT_EQ(r.err, "");
}

TEST(Cli, GenerateFromGgufV1AndVerboseStatsGoToStderr) {
  std::string m = models_dir() + "/stories260K/tinyllamas-stories-260k-f32.gguf";
  SKIP_IF_MISSING(m);
  Result r = run("generate -m " + m + " -p 'Once upon a time' -n 40 --verbose --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 40), "Once upon a time, there was a little gir");
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos);
}

// The synthetic models' 64-token prompt as "1,5,9,..." (../shared/models/synthetic/prompts/p64.ids).
std::string prompt_ids() {
  std::ifstream in(models_dir() + "/synthetic/prompts/p64.ids");
  std::string ids((std::istreambuf_iterator<char>(in)), {});
  while (!ids.empty() && (ids.back() == '\n' || ids.back() == ' ')) ids.pop_back();
  return ids;
}

// llama.cpp's greedy ids from a manifest .greedy.json, as `generate --print-ids` prints them ("[1,2,3]").
std::string greedy_ids(const std::string& path) {
  std::ifstream g(path);
  std::string greedy((std::istreambuf_iterator<char>(g)), {});
  std::string want = greedy.substr(greedy.find('['), greedy.find(']') - greedy.find('[') + 1);
  want.erase(std::remove(want.begin(), want.end(), ' '), want.end());
  return want;
}

// The engine-comparison commands of issue G on a family other than llama: ids in, llama.cpp's greedy ids and logits
// out (the prompt and references are ../shared/models/synthetic's).
TEST(Cli, GeneratePromptIdsPrintsLlamaCppGreedyIdsAndLogitsWritesEveryPosition) {
  const std::string dir = models_dir() + "/synthetic/qwen3";
  SKIP_IF_MISSING(dir + "/qwen3-f32.gguf");
  const std::string ids = prompt_ids();
  Result r = run("generate -m " + dir + "/qwen3-f32.gguf --prompt-ids " + ids + " -n 16 --temp 0 --print-ids");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, greedy_ids(dir + "/qwen3-f32.greedy.json") + "\n");
  const std::string out = ::testing::TempDir() + "/qwen3_logits_" + std::to_string(::getpid()) + ".f32";
  r = run("logits -m " + dir + "/qwen3-f32.gguf --ids-file " + models_dir() + "/synthetic/prompts/p64.ids -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream o(out, std::ios::binary), ref(dir + "/qwen3-f32.logits.f32", std::ios::binary);
  std::vector<float> x(64 * 512), y(64 * 512);
  o.read(reinterpret_cast<char*>(x.data()), x.size() * 4);
  ref.read(reinterpret_cast<char*>(y.data()), y.size() * 4);
  ASSERT_TRUE(o.good() && ref.good());
  EXPECT_EQ(o.peek(), EOF) << "exactly [64][512] floats";
  float worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  EXPECT_LE(worst, 1e-3f);
  std::remove(out.c_str());
  r = run("logits -m " + dir + "/qwen3-f32.gguf --ids 1,5,99999 -o " + out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("token id 99999 is outside the vocabulary"), std::string::npos) << r.err;
  r = run("generate -m " + dir + "/qwen3-f32.gguf --print-ids -p hi");
  EXPECT_NE(r.err.find("--print-ids needs --prompt-ids"), std::string::npos) << r.err;
}

// Cache flags on a single prompt are not ignored: they run it through the engine's paged cache. On DeepSeek (a latent
// cache) the decompressed path gives llama.cpp's greedy ids too, and what cannot apply to a latent is refused.
TEST(Cli, GenerateHonoursCacheFlagsOnASinglePrompt) {
  const std::string dir = models_dir() + "/synthetic/deepseek2";
  SKIP_IF_MISSING(dir + "/deepseek2-v3-F32.gguf");
  const std::string ids = prompt_ids();
  const std::string m = dir + "/deepseek2-v3-F32.gguf";
  const std::string want = greedy_ids(dir + "/deepseek2-v3-F32.greedy.json");
  Result r = run("generate -m " + m + " --prompt-ids " + ids + " -n 16 --temp 0 --print-ids --mla-attention decompressed");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, want + "\n");
  r = run("generate -m " + m + " --prompt-ids 1,5,9 -n 2 --kv-cache-compression on --kv-compression-rank 16");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("low-rank K/V does not apply to a latent (MLA) cache"), std::string::npos) << r.err;
  // The latent (256 here) and the rope key (32) rotate apart; an int4 record needs even parts.
  r = run("generate -m " + m + " --prompt-ids 1,5,9 -n 2 --print-ids --kv-cache-compression on --kv-cache-dtype int8 "
          "--kv-quant-rotation hadamard");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.front(), '[');
}

TEST(Cli, SeededSamplingIsReproducible) {
  SKIP_IF_MISSING(models_dir() + "/stories260K/stories260K.bin");
  Result a = run("generate -n 30 --temp 0.9 --top-p 0.9 --seed 42");
  Result b = run("generate -n 30 --temp 0.9 --top-p 0.9 --seed 42");
  Result c = run("generate -n 30 --temp 0.9 --top-p 0.9 --seed 43");
  ASSERT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
}

TEST(Cli, UnknownFlagIsOneLineError) {
  Result r = run("generate --no-such-flag");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines(r.err), 1);
  EXPECT_NE(r.err.find("error: The following argument was not expected: --no-such-flag"), std::string::npos) << r.err;
  Result neg = run("generate -n -5");
  EXPECT_EQ(neg.exit_code, 2);
  EXPECT_EQ(count_lines(neg.err), 1);
}

TEST(Cli, MissingModelFileIsOneLineError) {
  Result r = run("generate -m /nonexistent/model.gguf -p hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: model not found: '/nonexistent/model.gguf'\n");
}

TEST(Cli, PromptLongerThanContextIsOneLineError) {
  SKIP_IF_MISSING(models_dir() + "/stories260K/stories260K.bin");
  std::string prompt;
  for (int i = 0; i < 300; ++i) prompt += "hello world ";
  Result r = run("generate -p '" + prompt + "' -n 5");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(count_lines(r.err), 1);
  EXPECT_NE(r.err.find("context is 512 tokens"), std::string::npos) << r.err;
}

TEST(Cli, GarbageModelFileIsOneLineError) {
  std::string path = ::testing::TempDir() + "/garbage_" + std::to_string(::getpid()) + ".gguf";
  std::ofstream(path) << "GGUF\x03\0\0\0garbage";
  Result r = run("generate -m " + path + " -p hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(count_lines(r.err), 1);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
}

TEST(Cli, PerplexityPrintsGoldenValueAndJson) {
  SKIP_IF_MISSING(models_dir() + "/stories260K/stories260K.bin");
  Result r = run("perplexity -f " + data_dir() + "/tinystories_valid_head.txt --max-tokens 512 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"mean_nll\":1.311"), std::string::npos) << r.out;
}

TEST(Cli, TokenizeMatchesGoldenIds) {
  SKIP_IF_MISSING(models_dir() + "/stories260K/stories260K.bin");
  Result r = run("tokenize -p 'Once upon a time'");
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
  Result nb = run("tokenize --no-bos -p 'Once upon a time'");
  EXPECT_EQ(nb.out, "403 407 261 378\n");
}

TEST(Cli, TokenizeAcceptsVocabOnlyGguf) {
  std::string v = data_dir() + "/tokenizer-tests/ggml-vocab-llama-spm.gguf";
  SKIP_IF_MISSING(v);
  Result r = run("tokenize -m " + v + " --no-bos -p 'Hello world'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "15043 3186\n");
}

TEST(Cli, PromptsFileRunsBatchedAndMatchesSingleRuns) {
  SKIP_IF_MISSING(models_dir() + "/stories260K/stories260K.bin");
  std::string path = ::testing::TempDir() + "/prompts_" + std::to_string(::getpid()) + ".txt";
  std::ofstream(path) << "Once upon a time\n{\"prompt\": \"The dog\", \"max_tokens\": 8}\nLily saw a\n";
  Result r = run("generate --prompts-file " + path + " -n 20 --kv-cache-memory 0.05 --block-size 8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count_lines(r.out), 3);
  const char* prompts[] = {"Once upon a time", "The dog", "Lily saw a"};
  const int n[] = {20, 8, 20};
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    std::string line = r.out.substr(pos, r.out.find('\n', pos) - pos);
    pos = r.out.find('\n', pos) + 1;
    Result single = run(std::string("generate -p '") + prompts[i] + "' -n " + std::to_string(n[i]));
    std::string completion = single.out.substr(std::string(prompts[i]).size());
    completion.pop_back();  // generate's final newline
    EXPECT_NE(line.find("\"completion\":\"" + completion + "\""), std::string::npos) << line << " vs " << completion;
    EXPECT_NE(line.find("\"index\":" + std::to_string(i)), std::string::npos);
  }
  std::remove(path.c_str());
}

TEST(Cli, BenchOfflineLosesNoRequestAndReportsJson) {
  SKIP_IF_MISSING(models_dir() + "/stories260K/stories260K.bin");
  Result r = run("bench offline --num-prompts 12 --input-len 40 --output-len 16 --shared-prefix-len 16 "
                 "--kv-cache-memory 0.05 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"rejected\":0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"ttft_ms\""), std::string::npos);
  EXPECT_NE(r.out.find("\"prefix_hit_rate\""), std::string::npos);
}

TEST(Cli, BadEngineFlagIsOneLineError) {
  Result r = run("generate --prompts-file /dev/null --block-size 12");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
}

TEST(Cli, EvalComparesConfigsOnTheSameWindows) {
  SKIP_IF_MISSING(models_dir() + "/stories260K/stories260K.bin");
  std::string cfg = repo_dir() + "/configs/int8.json", off = repo_dir() + "/configs/off.json";
  Result r = run("eval --data " + data_dir() + "/tinystories_valid_head.txt --max-tokens 600 --config " + off + " " +
                 cfg + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // off.json is the plain cache: exactly the baseline (KL 0, top-1 agreement 1).
  EXPECT_NE(r.out.find("\"config\":\"" + off + "\",\"kv_bytes_per_token\":1280,\"mean_kl\":0.0"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"kv_bytes_per_token\":400"), std::string::npos) << r.out;
  Result bad = run("eval --data " + data_dir() + "/tinystories_valid_head.txt --config /nonexistent.json");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(count_lines(bad.err), 1);
}

}  // namespace
}  // namespace slimkv::test
