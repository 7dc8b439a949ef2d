// An MTP head (issue SD, "method": "mtp") against an independent forward: models/kjv-4k-mtp's head — kjv-4k with a
// DeepSeek-V3-layout nextn block trained by tools/train/train_mtp.py — gives, at every position of a KJV passage,
// the logits the training script's own torch forward gives (float64, from the committed F16 weights: head.pt and
// kjv-4k's checkpoint.pt); llama.cpp has no MTP path to compare with. The head reads the trunk's hidden states
// computed by slimkv, and the MTP proposer's first draft is the reference's argmax at the last position.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/mtp_proposer.h"
#include "model/mtp_head.h"
#include "model_helpers.h"
#include "runner/batch_builder.h"
#include "runner/sequence_forward.h"
#include "sampling/sampler.h"
#include "test_paths.h"

namespace slimkv::test {
namespace {

// The reference's logits [n - 1][vocab] for ids (position i: hidden h_i and token ids[i + 1]).
std::vector<std::vector<float>> reference_logits(const std::vector<int32_t>& ids) {
  const std::string in = ::testing::TempDir() + "/mtp-ref-" + std::to_string(::getpid()) + ".json";
  std::ofstream(in) << nlohmann::json{{"ids", ids}}.dump();
  const std::string cmd = "/usr/bin/python3 " + repo_dir() + "/tools/train/train_mtp.py reference --threads 1 --head " +
                          repo_dir() + "/models/kjv-4k-mtp/head.pt < " + in;
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << cmd;
  return nlohmann::json::parse(out)["logits"].get<std::vector<std::vector<float>>>();
}

// slimkv's head over ids: the trunk's final-normed hidden states ([n, dim], into *hidden) and the head's logits at
// every position i < n - 1 ([n - 1, vocab]: input h_i and ids[i + 1]).
std::vector<float> head_logits(const Model& m, ThreadPool& pool, const std::vector<int32_t>& ids,
                               std::vector<float>* hidden) {
  const int32_t n = static_cast<int32_t>(ids.size()), dim = m.config.dim, vocab = m.config.vocab_size;
  SequenceForward trunk(m, &pool, n);
  hidden->resize(static_cast<size_t>(n) * dim);
  trunk.hidden_states(ids, hidden->data());
  auto head = mtp_head_model(m, 0);
  DecoderForward fwd(*head, &pool);
  const KvLayout layout = fwd.kv_layout(16);
  KvStorage kv(layout, layout.pool_blocks_for_tokens(n));
  std::vector<GroupKv> table(1);
  for (int32_t b = 0; b < layout.group_blocks_for_tokens(0, n); ++b) table[0].blocks.push_back(b);
  SchedOutput out;
  ScheduledChunk c;
  c.token_ids = std::span<const int32_t>(ids).subspan(1);
  c.groups = table;
  out.chunks.push_back(c);
  ForwardBatch batch;
  build_forward_batch(out, 16, layout.groups, batch);
  batch.input_hidden.assign(hidden->begin(), hidden->end() - dim);
  batch.logits_rows.clear();
  for (int32_t t = 0; t < n - 1; ++t) batch.logits_rows.push_back(t);
  std::vector<float> logits(static_cast<size_t>(n - 1) * vocab);
  fwd.forward(batch, kv, logits.data());
  return logits;
}

TEST(MtpHead, LogitsEqualTheTorchReferenceAndTheProposerDraftsItsArgmax) {
  const std::string dir = repo_dir() + "/models/kjv-4k-mtp";
  SKIP_IF_MISSING(dir + "/model.gguf");
  SKIP_IF_MISSING(dir + "/head.pt");
  auto m = load(dir + "/model.gguf");
  ASSERT_EQ(m->config.num_mtp_layers, 1);
  ASSERT_EQ(m->config.num_layers, 4);  // the head is not a trunk layer
  const std::vector<int32_t> ids = m->tokenizer->encode(
      "In the beginning God created the heaven and the earth. And the earth was without form, and void; and "
      "darkness was upon the face of the deep.", true);
  const int32_t n = static_cast<int32_t>(ids.size()), vocab = m->config.vocab_size;
  ASSERT_GT(n, 20);
  const auto ref = reference_logits(ids);
  ASSERT_EQ(ref.size(), static_cast<size_t>(n - 1));
  ThreadPool pool(2);
  std::vector<float> hidden;
  const std::vector<float> logits = head_logits(*m, pool, ids, &hidden);
  double worst = 0, scale = 0;
  int32_t same_argmax = 0;
  for (int32_t t = 0; t < n - 1; ++t) {
    const float* row = logits.data() + static_cast<size_t>(t) * vocab;
    for (int32_t v = 0; v < vocab; ++v) {
      worst = std::max(worst, std::abs(static_cast<double>(row[v]) - ref[t][v]));
      scale = std::max(scale, std::abs(static_cast<double>(ref[t][v])));
    }
    same_argmax += argmax(row, vocab) == argmax(ref[t].data(), vocab);
  }
  std::printf("MTP head vs torch: %d positions, max |diff| %.2e (max |logit| %.1f), argmax equal at %d\n", n - 1,
              worst, scale, same_argmax);
  EXPECT_LT(worst, 2e-3 * scale);  // f32 arithmetic on the same F16 weights
  EXPECT_GE(same_argmax, n - 2);   // a near-tie may flip once

  // The proposer: the rows observed, its first draft is the head's prediction after the last token.
  MtpProposer mtp(*m, 256, 16, 512, &pool);
  const int32_t free_before = mtp.free_blocks();
  mtp.observe(7, 0, hidden.data(), std::span<const int32_t>(ids).subspan(1, n - 1));
  const auto drafts = mtp.propose({7}, {n - 1}, {1});
  ASSERT_EQ(drafts[0].size(), 1u);
  EXPECT_EQ(drafts[0][0], argmax(ref[n - 2].data(), vocab));
  EXPECT_EQ(mtp.free_blocks(), free_before - (n - 1 + 15) / 16) << "its blocks as it grew";
  EXPECT_TRUE(mtp.propose({7}, {n - 1}, {1})[0].empty()) << "nothing new observed: no draft";
  mtp.retain({});
  EXPECT_EQ(mtp.free_blocks(), free_before) << "a finished request's lane lets its blocks go";

  // Without room for the whole passage (a pool of 16 tokens) the lane starts again at its unseen rows: the head
  // then sees only the last 16 positions — still a draft, from less context.
  MtpProposer small(*m, 16, 16, 16, &pool);
  small.observe(7, 0, hidden.data(), std::span<const int32_t>(ids).subspan(1, 16));
  ASSERT_EQ(small.propose({7}, {16}, {1})[0].size(), 1u);
  const float* later = hidden.data() + 16 * static_cast<size_t>(m->config.dim);  // rows 16 .. 23
  small.observe(7, 16, later, std::span<const int32_t>(ids).subspan(17, 8));
  EXPECT_EQ(small.propose({7}, {24}, {1})[0].size(), 1u) << "restarted at position 16";
  EXPECT_EQ(small.free_blocks(), 0);
}

// The engine's wiring: with k = 1 every draft is the head's argmax at (h_{p-1}, x_p) for the request's last token
// x_p, so a greedy run keeps exactly the drafts that the head computed over the finished text predicts — replayed
// here step by step (a kept draft advances two tokens) from slimkv's own full-sequence forward.
TEST(MtpHead, TheEnginesDraftsAreTheHeadsPredictionsOverTheText) {
  const std::string path = repo_dir() + "/models/kjv-4k-mtp/model.gguf";
  SKIP_IF_MISSING(path);
  auto m = load(path);
  const std::vector<int32_t> prompt = m->tokenizer->encode(
      "And God said, Let there be light: and there was light. And God saw the light, that it was good:", true);
  EngineConfig c;
  c.threads = 2;
  c.cache.kv_cache_memory_gib = 0.02;
  c.cache.enable_prefix_caching = false;
  c.sched.max_num_seqs = 1;
  c.sched.max_model_len = 256;
  c.speculative_config = R"({"method": "mtp", "num_speculative_tokens": 1, "adaptive": false})";
  Engine e(*m, c);
  RequestParams p;
  p.ignore_eos = true;
  p.max_tokens = 80;
  ASSERT_TRUE(std::holds_alternative<RequestId>(e.add_request(prompt, p)));
  std::vector<int32_t> ids = prompt;
  while (e.has_unfinished()) {
    for (const StepEvent& ev : e.step()) {
      if (ev.token >= 0) ids.push_back(ev.token);
    }
  }
  ThreadPool pool(2);
  std::vector<float> hidden;
  const std::vector<float> logits = head_logits(*m, pool, ids, &hidden);
  const int32_t P = static_cast<int32_t>(prompt.size()), N = static_cast<int32_t>(ids.size());
  const int32_t vocab = m->config.vocab_size;
  int64_t drafts = 0, kept = 0;
  for (int32_t last = P; N - 1 - last >= 2;) {  // a draft needs room for it and the token after (max_tokens)
    const bool keep = argmax(logits.data() + static_cast<size_t>(last - 1) * vocab, vocab) == ids[last + 1];
    ++drafts;
    kept += keep;
    last += keep ? 2 : 1;
  }
  std::printf("k = 1 over %d generated tokens: %lld drafts, %lld kept (engine %lld / %lld)\n", N - P,
              static_cast<long long>(drafts), static_cast<long long>(kept),
              static_cast<long long>(e.metrics().spec_draft_tokens),
              static_cast<long long>(e.metrics().spec_accepted_tokens));
  EXPECT_NEAR(e.metrics().spec_draft_tokens, drafts, 1);  // a near-tie may flip once between the two forwards
  EXPECT_NEAR(e.metrics().spec_accepted_tokens, kept, 1);
  EXPECT_GT(kept, 5);
}

TEST(MtpHead, AModelWithoutOneIsRefusedByName) {
  SKIP_IF_MISSING(k260);
  auto m = load(k260);
  EngineConfig c;
  c.cache.kv_cache_memory_gib = 0.01;
  c.speculative_config = R"({"method": "mtp", "num_speculative_tokens": 2})";
  try {
    Engine e(*m, c);
    FAIL() << "no MTP head: refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("MTP head"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace slimkv::test
