// Greedy outputs and perplexities of the real models in ../shared/models equal their third-party references
// (numpy float64 forward passes and llama2.c run.c), token for token.
#include <gtest/gtest.h>

#include "model_helpers.h"

namespace slimkv::test {
namespace {

const std::string k260_dir = models_dir() + "/stories260K";

std::vector<int32_t> ids_of(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

class Stories260KFormats : public ::testing::TestWithParam<std::string> {};

TEST_P(Stories260KFormats, GreedyFromPromptEqualsGolden) {
  std::string path = k260_dir + "/" + GetParam();
  SKIP_IF_MISSING(path);
  auto g = golden()["stories260K"];
  auto m = load(path);
  auto prompt = m->tokenizer->encode(g["prompt"].get<std::string>(), true);
  ASSERT_EQ(prompt, ids_of(g["prompt_ids"]));
  auto out = greedy(*m, prompt, 40);
  EXPECT_EQ(out, ids_of(g["greedy_40_ids"]));
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), out.begin(), out.end());
  EXPECT_EQ(m->tokenizer->decode(all), g["greedy_40_text"].get<std::string>());
}

TEST_P(Stories260KFormats, BosOnlyGreedyEqualsGolden) {
  std::string path = k260_dir + "/" + GetParam();
  SKIP_IF_MISSING(path);
  auto g = golden()["stories260K"];
  auto m = load(path);
  ThreadPool pool(2);
  EXPECT_EQ(greedy(*m, {1}, 60, &pool), ids_of(g["bos_only_greedy_60_ids"]));
}

INSTANTIATE_TEST_SUITE_P(AllFormats, Stories260KFormats,
                         ::testing::Values("stories260K.bin", "stories260K.gguf", "tinyllamas-stories-260k-f32.gguf"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (auto& ch : s) if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

TEST(GoldenModels, Stories260KPerplexityOnFirst512Tokens) {
  SKIP_IF_MISSING(k260_dir + "/stories260K.bin");
  auto g = golden()["stories260K"];
  auto m = load(k260_dir + "/stories260K.bin");
  auto ids = ids_of(g["eval_ids"]);
  EXPECT_NEAR(mean_nll(*m, ids), 1.3112, 0.001);
  // The tokenizer reproduces the eval ids from the text.
  std::string text = read_text_file(data_dir() + "/tinystories_valid_head.txt").substr(0, 3000);
  auto enc = m->tokenizer->encode(text, true);
  enc.resize(512);
  EXPECT_EQ(enc, ids);
}

TEST(GoldenModels, TinyStories656KGreedyAndPerplexity) {
  std::string dir = models_dir() + "/tinystories-656k";
  SKIP_IF_MISSING(dir + "/model.safetensors");
  auto g = golden()["TinyStories-656K"];
  auto m = load(dir);
  // The llama family's RoPE is NORM (adjacent pairs) whatever the format: HF q/k rows are permuted on load, as
  // llama.cpp's converter does.
  EXPECT_EQ(m->config.rope_layout, RopeLayout::Interleaved);
  EXPECT_EQ(greedy(*m, {1}, 60), ids_of(g["bos_only_greedy_60_ids"]));
  auto ids = ids_of(g["eval_ids"]);
  EXPECT_NEAR(mean_nll(*m, ids), 3.427, 0.002);
  std::string text = read_text_file(data_dir() + "/tinystories_valid_head.txt").substr(0, 3000);
  auto enc = m->tokenizer->encode(text, true);
  enc.resize(512);
  EXPECT_EQ(enc, ids);
}

TEST(GoldenModels, BabyLlamaChar105GreedyStart) {
  std::string path = models_dir() + "/babyllama-char105/model5000.bin";
  SKIP_IF_MISSING(path);
  auto m = load(path, models_dir() + "/babyllama-char105/tok105.bin");
  auto out = greedy(*m, {1}, 100);
  std::vector<int32_t> all = {1};
  all.insert(all.end(), out.begin(), out.end());
  std::string expect = "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.";
  EXPECT_EQ(m->tokenizer->decode(all).substr(0, expect.size()), expect);
}

TEST(GoldenModels, AiDreams260KGreedyStart) {
  std::string path = models_dir() + "/aidreams260K/aidreams260K.bin";
  SKIP_IF_MISSING(path);
  auto m = load(path);
  std::vector<int32_t> all = {1};
  auto out = greedy(*m, {1}, 40);
  all.insert(all.end(), out.begin(), out.end());
  std::string expect = "\"Echoes of vectors unfold, a gentle hum of precision, as I sense the nodes,";
  EXPECT_EQ(m->tokenizer->decode(all).substr(0, expect.size()), expect);
}

struct KjvCase {
  std::string prompt;
  int32_t steps;
  std::vector<int32_t> ids;
  std::string text;
};

TEST(GoldenModels, Kjv1kMatchesRunC) {
  std::string path = models_dir() + "/kjv-1k/model.bin";
  SKIP_IF_MISSING(path);
  auto m = load(path);
  std::vector<KjvCase> cases = {
      {"In the beginning", 48,
       {271, 261, 282, 378, 964, 383, 977, 270, 261, 282, 614, 669, 271, 261, 282, 378, 964, 383, 969, 977, 270,
        271, 261, 282, 614, 669, 271, 261, 282, 378, 964, 383, 969, 977, 270, 261, 282, 378, 964, 383, 969},
       "In the beginning of the curtain, and the country of the curtains, and of the country of the curtains, and "
       "the curtains"},
      {"And the LORD said unto Moses", 48,
       {977, 368, 963, 963, 977, 270, 298, 396, 703, 397, 293, 261, 340, 977, 270, 298, 396, 703, 397, 293, 261,
        340, 985, 300, 675, 387, 977, 298, 396, 351, 414, 347, 397, 977, 270, 298, 396, 703, 397, 483, 261, 479},
       "And the LORD said unto Moses, See, and I will bring thee to the LORD, and I will bring thee to the LORD. And "
       "Moses said, I will not go with thee, and I will bring thee into the hand"},
      {"Blessed are the", 48,
       {273, 946, 331, 977, 270, 261, 273, 754, 969, 271, 261, 282, 379, 973, 391, 970, 459, 977, 270, 261, 273,
        754, 969, 271, 261, 282, 379, 973, 391, 970, 459, 977, 270, 261, 273, 754, 969, 650, 977, 270, 261, 273},
       "Blessed are the battle, and the beasts of the candlestick, and the beasts of the candlestick, and the beasts "
       "thereof, and the b"},
  };
  for (const auto& c : cases) {
    auto prompt = m->tokenizer->encode(c.prompt, true);
    int32_t n = c.steps - static_cast<int32_t>(prompt.size()) + 1;  // run.c's STEPS counts the prompt
    auto out = greedy(*m, prompt, n);
    EXPECT_EQ(out, c.ids) << c.prompt;
    std::vector<int32_t> all = prompt;
    all.insert(all.end(), out.begin(), out.end());
    EXPECT_EQ(m->tokenizer->decode(all), c.text);
  }
}

TEST(GoldenModels, Kjv1kFirstWindowPerplexityAndTokenizerMatchReference) {
  std::string path = models_dir() + "/kjv-1k/model.bin";
  SKIP_IF_MISSING(path);
  SKIP_IF_MISSING(models_dir() + "/kjv-1k/kjv-valid.ids.u16");
  auto m = load(path);
  MappedFile ids_file(models_dir() + "/kjv-1k/kjv-valid.ids.u16");
  const auto* u16 = reinterpret_cast<const uint16_t*>(ids_file.data());
  std::vector<int32_t> window = {1};
  for (int i = 0; i < 1023; ++i) window.push_back(u16[i]);
  EXPECT_NEAR(mean_nll(*m, window), 3.1702, 0.001);  // README: first window, 1023 predictions
  // run.c-style encoding of the held-out text gives the same ids as sentencepiece did.
  std::string text = read_text_file(data_dir() + "/kjv-valid.txt").substr(0, 8000);
  auto enc = m->tokenizer->encode(text, true);
  ASSERT_GE(enc.size(), 1024u);
  enc.resize(1024);
  EXPECT_EQ(enc, window);
}

}  // namespace
}  // namespace slimkv::test
