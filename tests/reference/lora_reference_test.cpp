// LoRA adapters (issue E2) against llama.cpp: a random adapter over every attention and dense FFN projection (and
// the output head where the file has one) gives logits within the F32 criteria of llama.cpp's with the same adapter
// attached (tests/reference/lora_ref: llama_adapter_lora_init + llama_set_adapters_lora on the shipped libllama),
// on two families; in the engine, two adapters and the base model in one batch give each one's output alone, and
// prefix-cache blocks never cross adapters.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <regex>

#include "engine/engine.h"
#include "formats/gguf_file.h"
#include "formats/gguf_writer.h"
#include "lora_adapter_file.h"
#include "model/lora_adapter.h"
#include "model_helpers.h"
#include "reference_helpers.h"

namespace slimkv::test {
namespace {

class LoraReference : public ::testing::TestWithParam<std::string> {};

TEST_P(LoraReference, LogitsMatchLlamaCppWithTheSameAdapter) {
  const std::string model_path = synthetic_dir() + "/" + GetParam();
  const std::string ids_path = synthetic_dir() + "/prompts/p64.ids";
  SKIP_IF_MISSING(model_path);
#ifndef SLIMKV_LORA_REF
  if (in_ci()) FAIL() << "lora_ref was not built (../shared/bench-ref/llama.cpp/libllama.so.0 missing)";
  GTEST_SKIP() << "lora_ref not built";
#else
  const std::string ref = slimkv_ref_binary();
  if (ref.empty()) GTEST_SKIP() << "llama.cpp reference not runnable on this CPU (bench-ref/llama.cpp/check-cpu)";
  const std::string backends = std::filesystem::path(ref).parent_path().string();
  const std::string adapter = write_adapter(model_path, GetParam().substr(0, GetParam().find('/')), 4, 8.0f, 7);
  const float scale = 0.75f;  // alpha / rank x scale = 1.5
  const std::string out = adapter + ".logits.f32";
  const std::string cmd = std::string(SLIMKV_LORA_REF) + " " + backends + " " + model_path + " " + ids_path + " " +
                          out + " --lora " + adapter + " --scale 0.75 2>" + out + ".log";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << read_text_file(out + ".log");
  const std::vector<float> want = read_f32_file(out);

  auto m = load(model_path);
  const auto lora = load_lora_adapter(*m, "test", adapter, scale);
  const std::vector<int32_t> ids = read_ids_file(ids_path);
  const int32_t n = static_cast<int32_t>(ids.size()), vocab = m->config.vocab_size;
  SequenceForward fwd(*m, nullptr, n, 16, n);
  fwd.set_lora(lora.get());
  std::vector<float> got(static_cast<size_t>(n) * vocab);
  fwd.forward(ids, 0, true, got.data());
  const LogitsDiff d = compare_logits(got, want, vocab);
  EXPECT_LE(d.worst(), 1e-3) << "the F32 criterion (max |Δlogit|)";
  const LogitsDiff moved = compare_logits(all_logits(*m, ids, 0), want, vocab);
  EXPECT_GT(moved.worst(), 0.05) << "the adapter must change the logits for this comparison to mean anything";
  std::printf("%s: %zu targets, max |Δlogit| vs llama.cpp %.2e (the base model is %.2f away)\n", GetParam().c_str(),
              lora->targets.size(), d.worst(), moved.worst());
#endif
}

INSTANTIATE_TEST_SUITE_P(Families, LoraReference, ::testing::Values("llama/llama-f32.gguf", "qwen3/qwen3-f32.gguf"),
                         [](const auto& info) { return info.param.substr(0, info.param.find('/')); });

struct Finished {
  std::vector<int32_t> tokens;
  int32_t cached_tokens = 0;
};

// Greedy 24 tokens of `prompt` for each adapter (null: the base) in one engine, all added at once.
std::vector<Finished> run_engine(const Model& m, const std::vector<int32_t>& prompt,
                                 const std::vector<std::shared_ptr<const LoraAdapter>>& adapters, Engine* reuse = nullptr) {
  EngineConfig c;
  c.cache.kv_cache_memory_gib = 0.05;
  c.cache.block_size = 16;
  c.sched.max_num_batched_tokens = 23;
  c.threads = 2;
  std::unique_ptr<Engine> own;
  if (!reuse) own = std::make_unique<Engine>(m, c);
  Engine& e = reuse ? *reuse : *own;
  std::map<RequestId, size_t> index;
  for (size_t i = 0; i < adapters.size(); ++i) {
    RequestParams p;
    p.ignore_eos = true;
    p.max_tokens = 24;
    p.lora = adapters[i];
    index[std::get<RequestId>(e.add_request(prompt, p))] = i;
  }
  std::vector<Finished> out(adapters.size());
  while (e.has_unfinished()) {
    for (const auto& ev : e.step()) {
      if (ev.token >= 0) out[index[ev.id]].tokens.push_back(ev.token);
    }
    e.check_integrity();
  }
  for (auto& r : e.take_finished()) out[index[r->id]].cached_tokens = r->num_cached_tokens;
  return out;
}

TEST(LoraEngine, TwoAdaptersAndTheBaseInOneBatchEqualEachAloneAndNeverShareBlocks) {
  const std::string model_path = synthetic_dir() + "/llama/llama-f32.gguf";
  SKIP_IF_MISSING(model_path);
  auto m = load(model_path);
  const auto a = load_lora_adapter(*m, "a", write_adapter(model_path, "engine-a", 4, 8.0f, 11), 1.0f);
  const auto b = load_lora_adapter(*m, "b", write_adapter(model_path, "engine-b", 8, 0.0f, 12, 0.03f), 1.0f);
  std::vector<int32_t> prompt = read_ids_file(synthetic_dir() + "/prompts/p64.ids");
  const std::vector<std::shared_ptr<const LoraAdapter>> order = {nullptr, a, b, a, b, nullptr};
  std::vector<std::vector<int32_t>> alone;
  for (const auto& ad : order) alone.push_back(run_engine(*m, prompt, {ad})[0].tokens);
  EXPECT_NE(alone[0], alone[1]) << "adapter a must change the greedy output";
  EXPECT_NE(alone[0], alone[2]) << "adapter b must change the greedy output";
  EXPECT_NE(alone[1], alone[2]);
  // all six in one engine (chunks of 23 tokens: prefills and decodes of different adapters share steps)
  EngineConfig c;
  c.cache.kv_cache_memory_gib = 0.05;
  c.cache.block_size = 16;
  c.sched.max_num_batched_tokens = 23;
  c.threads = 2;
  Engine e(*m, c);
  const auto together = run_engine(*m, prompt, order, &e);
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(together[i].tokens, alone[i]) << "request " << i;
  // the cache now holds the prompt's blocks under the base, a and b: each hits only its own
  const auto again = run_engine(*m, prompt, {a}, &e);
  EXPECT_EQ(again[0].tokens, alone[1]);
  EXPECT_GT(again[0].cached_tokens, 0) << "a's own blocks";
  const auto c_adapter = load_lora_adapter(*m, "c", write_adapter(model_path, "engine-c", 4, 8.0f, 13), 1.0f);
  const auto fresh = run_engine(*m, prompt, {c_adapter}, &e);
  EXPECT_EQ(fresh[0].cached_tokens, 0) << "no block computed under another adapter (or none) serves c";
  EXPECT_EQ(e.kv_manager().num_used_blocks(), 0);
}

TEST(LoraEngine, BadAdaptersAreRefusedByName) {
  const std::string model_path = synthetic_dir() + "/llama/llama-f32.gguf";
  SKIP_IF_MISSING(model_path);
  auto m = load(model_path);
  auto refused = [&](const std::string& path, const std::string& what) {
    try {
      load_lora_adapter(*m, "x", path);
      ADD_FAILURE() << "accepted " << path;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused(model_path, "not a LoRA adapter");
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_string("general.type", "adapter");
  w.add_string("adapter.type", "lora");
  std::vector<float> x(64 * 4, 0.0f);
  w.add_tensor("blk.0.attn_q.weight.lora_a", DType::F32, {7, 4}, x.data(), 7 * 4 * sizeof(float));
  w.add_tensor("blk.0.attn_q.weight.lora_b", DType::F32, {4, 7}, x.data(), 7 * 4 * sizeof(float));
  const std::string bad = ::testing::TempDir() + "/lora-bad-" + std::to_string(::getpid()) + ".gguf";
  w.write(bad);
  refused(bad, "do not fit the base weight");
  GgufWriter other;
  other.add_string("general.architecture", "qwen3");
  other.add_string("general.type", "adapter");
  other.add_string("adapter.type", "lora");
  other.add_tensor("blk.0.attn_q.weight.lora_a", DType::F32, {7, 4}, x.data(), 7 * 4 * sizeof(float));
  other.add_tensor("blk.0.attn_q.weight.lora_b", DType::F32, {4, 7}, x.data(), 7 * 4 * sizeof(float));
  other.write(bad);
  refused(bad, "an adapter for 'qwen3'");
}

}  // namespace
}  // namespace slimkv::test
