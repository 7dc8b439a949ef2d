// Speculative decoding with the model's own MTP head (issue SD, "method": "mtp") on models/kjv-4k-mtp: the same
// requests give plain decoding's tokens exactly — greedy, batched, with chunked prefill, prefix-cache hits (a
// head's lane then starts at the first computed position) and preemption (its lane is let go and rebuilt from the
// recompute) — on every cache kind the target rolls back (f32, int8 and tq4 pages with a residual window, static
// sinks + window, dynamic retention with merges), with k = 1 / 2 / 4 / 8; and sampled requests give plain
// sampling's tokens for the same seeds.
#include <gtest/gtest.h>

#include <map>

#include "engine_helpers.h"
#include "model_helpers.h"

namespace slimkv::test {
namespace {

const std::string kMtpModel = repo_dir() + "/models/kjv-4k-mtp/model.gguf";

// KJV passages behind one shared opening (later arrivals hit the prefix cache), different lengths and ends.
std::vector<TestRequest> kjv_jobs(const Model& m) {
  const std::string opening = "And God said, Let there be light: and there was light. And God saw the light, that it "
                              "was good: and God divided the light from the darkness.";
  const char* tails[] = {" And God called the light Day,", " And the evening and the morning were the first day.",
                         " And God said, Let there be a firmament in the midst of the waters,",
                         " And God made the firmament, and divided the waters",
                         " And the earth brought forth grass, and herb yielding seed after his kind,",
                         " And God said, Let the waters under the heaven be gathered together unto one place,"};
  std::vector<TestRequest> jobs;
  for (int i = 0; i < 6; ++i) {
    TestRequest j;
    j.prompt = m.tokenizer->encode(opening + tails[i], true);
    j.max_tokens = 28 + 6 * i;
    j.arrival_step = i == 0 ? 0 : 2 + i;
    jobs.push_back(std::move(j));
  }
  return jobs;
}

struct MtpCase {
  std::string name, dtype, sparse;
  int32_t residual_tokens = 0;
};

class MtpSpeculation : public ::testing::TestWithParam<MtpCase> {};

TEST_P(MtpSpeculation, GreedyTokensEqualPlainDecodingBatchedCachedAndPreempted) {
  const MtpCase mc = GetParam();
  SKIP_IF_MISSING(kMtpModel);
  auto m = load(kMtpModel);
  const auto jobs = kjv_jobs(*m);
  for (bool tight : {false, true}) {
    EngineConfig c = small_engine_config();
    use_cache_kind(c, mc.dtype, mc.residual_tokens, mc.sparse);
    c.sched.max_num_batched_tokens = 16;
    c.sched.max_model_len = 112;
    if (tight) {  // one sequence's blocks and a few more: preemption
      const KvLayout layout = Engine(*m, c).kv_layout();
      int64_t bytes = 0;
      for (int32_t p = 0; p < layout.num_pools(); ++p) {
        bytes += (layout.blocks_for_sequence(112, 16, p) + 3) * layout.bytes_per_block(p);
      }
      c.cache.kv_cache_memory_gib = static_cast<double>(bytes) / (1 << 30);
    }
    const EngineRun plain = run_requests(*m, c, jobs);
    EXPECT_GT(plain.metrics.prefix_hit_tokens, 0) << mc.name << ": later prompts hit the shared opening";
    for (int32_t k : {1, 2, 4, 8}) {
      EngineConfig s = c;
      s.speculative_config =
          fmt::format(R"({{"method": "mtp", "num_speculative_tokens": {}, "adaptive": false}})", k);
      const EngineRun spec = run_requests(*m, s, jobs);
      for (size_t i = 0; i < jobs.size(); ++i) {
        EXPECT_EQ(spec.tokens[i], plain.tokens[i]) << mc.name << " k " << k << (tight ? " tight" : "") << " job " << i;
      }
      const Metrics& sm = spec.metrics;
      EXPECT_GT(sm.spec_drafts, 0) << mc.name;
      EXPECT_GT(sm.spec_accepted_tokens, 0) << mc.name << ": the head's drafts are accepted";
      EXPECT_LE(sm.spec_accepted_tokens, sm.spec_draft_tokens);
      if (tight && k == 4) EXPECT_GT(sm.num_preemptions, 0) << mc.name;
      if (k == 2 && !tight) {
        std::printf("%s: k 2: %lld verify chunks, %lld drafted, %lld accepted (%.2f), steps %lld vs %lld plain\n",
                    mc.name.c_str(), static_cast<long long>(sm.spec_drafts),
                    static_cast<long long>(sm.spec_draft_tokens), static_cast<long long>(sm.spec_accepted_tokens),
                    static_cast<double>(sm.spec_accepted_tokens) / std::max<int64_t>(1, sm.spec_draft_tokens),
                    static_cast<long long>(sm.num_steps), static_cast<long long>(plain.metrics.num_steps));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, MtpSpeculation,
                         ::testing::Values(MtpCase{"f32", "f32", ""}, MtpCase{"int8", "int8", ""},
                                           MtpCase{"tq4_residual", "tq4", "", 16},
                                           MtpCase{"static_window", "f32", "static"},
                                           MtpCase{"dynamic_merge", "f32", "merge"}),
                         [](const auto& info) { return info.param.name; });

// Sampled (temperature 0.5, top-p 0.9, own seeds): the head's greedy drafts are verified row by row by each
// request's sampler, so the tokens are plain sampling's.
std::vector<std::vector<int32_t>> sampled(const Model& m, const EngineConfig& c, const std::vector<TestRequest>& jobs,
                                          Metrics* metrics) {
  Engine e(m, c);
  std::map<RequestId, size_t> index;
  for (size_t i = 0; i < jobs.size(); ++i) {
    RequestParams p;
    p.ignore_eos = true;
    p.max_tokens = jobs[i].max_tokens;
    p.sampling.temperature = 0.5f;
    p.sampling.top_p = 0.9f;
    p.sampling.seed = 77 + i;
    index[std::get<RequestId>(e.add_request(jobs[i].prompt, p))] = i;
  }
  std::vector<std::vector<int32_t>> out(jobs.size());
  while (e.has_unfinished()) {
    for (const StepEvent& ev : e.step()) {
      if (ev.token >= 0) out[index.at(ev.id)].push_back(ev.token);
    }
  }
  *metrics = e.metrics();
  return out;
}

TEST(MtpSpeculation, SampledTokensEqualPlainSamplingsForTheSameSeeds) {
  SKIP_IF_MISSING(kMtpModel);
  auto m = load(kMtpModel);
  const auto jobs = kjv_jobs(*m);
  EngineConfig c = small_engine_config();
  c.sched.max_model_len = 112;
  Metrics plain_m, spec_m;
  const auto plain = sampled(*m, c, jobs, &plain_m);
  c.speculative_config = R"({"method": "mtp", "num_speculative_tokens": 3, "adaptive": false})";
  const auto spec = sampled(*m, c, jobs, &spec_m);
  EXPECT_EQ(spec, plain);
  EXPECT_GT(spec_m.spec_accepted_tokens, 0);
  EXPECT_LT(spec_m.spec_accepted_tokens, spec_m.spec_draft_tokens) << "some drafts rejected: verification stops";
  // the adaptive switch: while drafts are off the head is not fed and its lanes go; they restart mid-sequence
  c.speculative_config = R"({"method": "mtp", "num_speculative_tokens": 3, "adaptive": true})";
  Metrics adaptive_m;
  EXPECT_EQ(sampled(*m, c, jobs, &adaptive_m), plain);
}

}  // namespace
}  // namespace slimkv::test
