// Sampling: greedy is argmax (first on ties), seeded sampling is reproducible, top-k/top-p restrict the support.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "sampling/sampler.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/stream_decoder.h"

namespace slimkv {
namespace {

TEST(Sampler, GreedyIsFirstArgmax) {
  std::vector<float> l = {0.1f, 2.0f, 2.0f, -1.0f};
  Sampler s({});
  EXPECT_EQ(s.sample(l.data(), 4), 1);
}

TEST(Sampler, ArgmaxMatchesAPlainScanAtEveryLengthWithTiesAndNaNs) {
  for (int32_t n = 1; n <= 40; ++n) {
    for (int32_t at = 0; at < n; ++at) {
      std::vector<float> x(n);
      for (int32_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 37) % 11) - 5.0f;
      x[at] = 100.0f;
      if (at + 3 < n) x[at + 3] = 100.0f;  // a later tie loses
      if (at > 0) x[at - 1] = std::nanf("");
      int32_t ref = 0;
      for (int32_t i = 1; i < n; ++i) if (x[i] > x[ref]) ref = i;
      ASSERT_EQ(argmax(x.data(), n), ref) << "n " << n << " at " << at;
    }
  }
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDiffers) {
  std::vector<float> l(50);
  for (int i = 0; i < 50; ++i) l[i] = 0.05f * i;
  auto draw = [&](uint64_t seed) {
    Sampler s({1.0f, 1.0f, 0, seed});
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s.sample(l.data(), 50));
    return out;
  };
  EXPECT_EQ(draw(7), draw(7));
  EXPECT_NE(draw(7), draw(8));
}

TEST(Sampler, TopKAndTopPRestrictTheSupport) {
  std::vector<float> l = {5.0f, 4.9f, 1.0f, 0.5f, 0.0f};
  Sampler k2({1.0f, 1.0f, 2, 3});
  Sampler p({1.0f, 0.5f, 0, 3});  // token 0 alone holds > 50% of the mass
  std::set<int32_t> seen_k, seen_p;
  for (int i = 0; i < 500; ++i) {
    seen_k.insert(k2.sample(l.data(), 5));
    seen_p.insert(p.sample(l.data(), 5));
  }
  EXPECT_EQ(seen_k, (std::set<int32_t>{0, 1}));
  EXPECT_EQ(seen_p, (std::set<int32_t>{0}));
}

TEST(Sampler, InvalidParamsAreErrors) {
  EXPECT_THROW(Sampler({-1.0f, 1.0f, 0, 0}), Error);
  EXPECT_THROW(Sampler({1.0f, 0.0f, 0, 0}), Error);
  EXPECT_THROW(Sampler({1.0f, 1.5f, 0, 0}), Error);
}

TEST(StreamDecoder, NeverEmitsHalfACharacter) {
  SpmVocab v;
  v.pieces = {"<unk>", "<s>", "</s>"};
  for (int b = 0; b < 256; ++b) v.pieces.push_back(fmt::format("<0x{:02X}>", b));
  v.pieces.push_back(" a");
  v.scores.assign(v.pieces.size(), 0.0f);
  SpmTokenizer tok(v);
  StreamDecoder d(tok);
  // "é" = C3 A9 as two byte tokens; "😀" = F0 9F 98 80 as four.
  EXPECT_EQ(d.push(259), "a");  // leading space stripped at the start
  EXPECT_EQ(d.push(3 + 0xC3), "");
  EXPECT_EQ(d.push(3 + 0xA9), "\xC3\xA9");
  EXPECT_EQ(d.push(3 + 0xF0), "");
  EXPECT_EQ(d.push(3 + 0x9F), "");
  EXPECT_EQ(d.push(3 + 0x98), "");
  EXPECT_EQ(d.push(3 + 0x80), "\xF0\x9F\x98\x80");
  EXPECT_EQ(d.push(3 + 0xE2), "");
  EXPECT_EQ(d.flush(), "\xE2");  // an unfinished tail comes out only at the end
}

}  // namespace
}  // namespace slimkv
