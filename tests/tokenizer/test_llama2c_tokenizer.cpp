// stories260K's llama2.c tokenizer (tok512.bin): run.c conventions and the golden reference ids.
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace slimkv::test {
namespace {

std::string tok512_path() { return models_dir() + "/stories260K/tok512.bin"; }

TEST(Llama2cTokenizer, PromptWithBos) {
  SKIP_IF_MISSING(tok512_path());
  auto tok = load_llama2c_tokenizer(tok512_path(), 512);
  EXPECT_EQ(tok->encode("Once upon a time", true), (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->vocab_size(), 512);
  EXPECT_EQ(tok->encode("", true), (std::vector<int32_t>{1}));
  EXPECT_TRUE(tok->encode("", false).empty());
}

TEST(Llama2cTokenizer, GoldenPromptAndEvalIds) {
  SKIP_IF_MISSING(tok512_path());
  SKIP_IF_MISSING(golden_path());
  auto tok = load_llama2c_tokenizer(tok512_path(), 512);
  auto g = golden()["stories260K"];
  EXPECT_EQ(tok->encode(g["prompt"].get<std::string>(), true), g["prompt_ids"].get<std::vector<int32_t>>());
  std::vector<int32_t> ids = tok->encode(eval_text(), true);
  ASSERT_GE(ids.size(), 512u);
  ids.resize(512);
  EXPECT_EQ(ids, g["eval_ids"].get<std::vector<int32_t>>());
}

TEST(Llama2cTokenizer, GoldenGreedyDecodes) {
  SKIP_IF_MISSING(tok512_path());
  SKIP_IF_MISSING(golden_path());
  auto tok = load_llama2c_tokenizer(tok512_path(), 512);
  auto g = golden()["stories260K"];
  std::vector<int32_t> ids = g["prompt_ids"].get<std::vector<int32_t>>();
  for (int32_t id : g["greedy_40_ids"].get<std::vector<int32_t>>()) ids.push_back(id);
  EXPECT_EQ(tok->decode(ids), g["greedy_40_text"].get<std::string>());
  std::vector<int32_t> bos_only{1};
  for (int32_t id : g["bos_only_greedy_60_ids"].get<std::vector<int32_t>>()) bos_only.push_back(id);
  EXPECT_EQ(tok->decode(bos_only), g["bos_only_greedy_60_text"].get<std::string>());
}

TEST(Llama2cTokenizer, RoundTripAsciiAndUtf8) {
  SKIP_IF_MISSING(tok512_path());
  auto tok = load_llama2c_tokenizer(tok512_path(), 512);
  const std::vector<std::string> texts = {
      "Once upon a time, there was a little girl named Lily.",
      "  two leading spaces and\nnew lines\n\n",
      "Caf\xC3\xA9 na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82",
      "emoji \xF0\x9F\xA6\x99 and \xF0\x9F\x98\x80\xF0\x9F\x9A\x80!",
      "\xF0\x9F\xA6\x99 first",
  };
  for (const auto& t : texts) {
    std::vector<int32_t> ids = tok->encode(t, true);
    EXPECT_EQ(tok->decode(ids), t) << escape(t);
    EXPECT_EQ(tok->decode(tok->encode(t, false)), t) << escape(t);
    StreamDecoder sd(*tok);  // streaming (generated tokens, no BOS) never splits a character: same text
    std::string streamed;
    for (int32_t id : tok->encode(t, false)) streamed += sd.push(id);
    streamed += sd.flush();
    EXPECT_EQ(streamed, t);
  }
}

}  // namespace
}  // namespace slimkv::test
