// BpeTokenizer: merge order, unknown-character handling, verbatim tokens, threads and speed.
#include <chrono>
#include <thread>

#include "core/check.h"
#include "formats/gguf_file.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer_test_util.h"

namespace slimkv::test {
namespace {

BpeConfig sp_config() {  // SentencePiece-like: ▁ marker, <0xNN> fallback, no pre-tokenizer
  BpeConfig c;
  c.pieces = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "c", "ab", "bc", "\xE2\x96\x81" "ab", "<0x21>"};
  c.types = {kTokControl, kTokControl, kTokControl, 1, 1, 1, 1, 1, 1, 1, 1};
  c.merges = {{"b", "c"}, {"a", "b"}, {"\xE2\x96\x81", "ab"}};
  c.normalizer = {{NormalizeStep::kPrepend, "", false, "\xE2\x96\x81"},
                  {NormalizeStep::kReplace, " ", false, "\xE2\x96\x81"}};
  c.decode_space_marker = "\xE2\x96\x81";
  c.byte_level = c.decode_byte_level = false;
  c.byte_fallback = c.decode_byte_fallback = true;
  c.unk_id = 0;
  c.fuse_unk = true;
  c.prefix_ids = {1};
  c.bos_id = 1;
  c.eos_id = 2;
  c.strip_leading_space = true;
  return c;
}

TEST(BpeTokenizer, LowestRankMergesFirst) {
  BpeTokenizer tok(sp_config());
  // "▁abc": (b,c) has rank 0, so "bc" forms before "ab" could: ▁ a bc.
  EXPECT_EQ(tok.encode("abc", false), (std::vector<int32_t>{3, 4, 8}));
  EXPECT_EQ(tok.encode("ab", true), (std::vector<int32_t>{1, 9}));
  EXPECT_EQ(tok.decode({1, 9}), "ab");
  EXPECT_EQ(tok.decode({3, 4, 8}), "abc");  // prev -1 strips the leading space too
}

TEST(BpeTokenizer, UnknownCharacters) {
  BpeTokenizer tok(sp_config());
  // '!' has a byte piece; 'x' and 'y' have none -> one fused <unk>.
  EXPECT_EQ(tok.encode("a!xyb", false), (std::vector<int32_t>{3, 4, 10, 0, 5}));
  BpeConfig c = sp_config();
  c.fuse_unk = false;
  EXPECT_EQ(BpeTokenizer(c).encode("xy", false), (std::vector<int32_t>{3, 0, 0}));
  c.unk_id = -1;  // dropped
  EXPECT_EQ(BpeTokenizer(c).encode("axy", false), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(tok.decode({0, 1, 2}), "");  // control tokens decode to nothing
  EXPECT_EQ(tok.decode_token(5, 10), "!");
  EXPECT_EQ(tok.decode_token(5, 99), "");
  EXPECT_EQ(tok.decode_token(5, -3), "");
}

TEST(BpeTokenizer, ByteLevelRoundTrip) {
  BpeConfig c;  // every byte is a piece: anything round-trips
  for (int b = 0; b < 256; ++b) c.pieces.push_back(byte_to_unicode(static_cast<uint8_t>(b)));
  c.pieces.push_back(byte_to_unicode(' ') + "h");
  c.merges = {{byte_to_unicode(' '), "h"}};
  for (const auto& p : pretokenizer_preset("gpt-2").patterns) c.pretokenizer.push_back(p);
  BpeTokenizer tok(c);
  EXPECT_EQ(byte_to_unicode(' '), "\xC4\xA0");
  EXPECT_EQ(tok.encode(" h", false), (std::vector<int32_t>{256}));
  const std::string text = "Hello \xF0\x9F\xA6\x99\n\t\x01 h\xC3\xA9";
  EXPECT_EQ(tok.decode(tok.encode(text, false)), text);
  EXPECT_EQ(tok.decode(tok.encode("bad \xFF utf8", false)), "bad \xEF\xBF\xBD utf8");  // as llama.cpp
}

TEST(BpeTokenizer, UserDefinedTokensAreSplitVerbatim) {
  BpeConfig c = sp_config();
  c.pieces.push_back("<tool>");
  c.types.push_back(kTokUserDefined);
  c.pieces.push_back("<tool>x");
  c.types.push_back(kTokUserDefined);
  BpeTokenizer tok(c);
  EXPECT_EQ(tok.encode("ab<tool>xab<tool>", false), (std::vector<int32_t>{9, 12, 9, 11}));  // longest first
  EXPECT_EQ(tok.decode({9, 12, 9, 11}), "ab<tool>x ab<tool>");
}

TEST(BpeTokenizer, InvalidConfigIsAnError) {
  BpeConfig c = sp_config();
  c.types.pop_back();
  EXPECT_THROW(BpeTokenizer{c}, Error);
  c = sp_config();
  c.prefix_ids = {42};
  EXPECT_THROW(BpeTokenizer{c}, Error);
  c = sp_config();
  c.merges.push_back({"", "a"});
  EXPECT_THROW(BpeTokenizer{c}, Error);
  EXPECT_THROW(BpeTokenizer{BpeConfig{}}, Error);
}

std::string gpt2_vocab() { return data_dir() + "/tokenizer-tests/ggml-vocab-gpt-2.gguf"; }

TEST(BpeTokenizer, ThreadsAgree) {
  SKIP_IF_MISSING(gpt2_vocab());
  SKIP_IF_MISSING(data_dir() + "/tinystories_valid_head.txt");
  GgufFile g(gpt2_vocab());
  auto tok = tokenizer_from_gguf(g);
  const std::string text = utf8_prefix(slurp(data_dir() + "/tinystories_valid_head.txt"), 20000);
  const std::vector<int32_t> expected = tok->encode(text, false);
  std::vector<std::vector<int32_t>> got(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) threads.emplace_back([&, i] { got[i] = tok->encode(text, false); });
  for (auto& t : threads) t.join();
  for (const auto& g2 : got) EXPECT_EQ(g2, expected);
  EXPECT_EQ(tok->decode(expected), text);
}

// "Encoding a 700 KB text should take well under a second": measured and printed; the bound is loose for slow CI.
TEST(BpeTokenizer, Speed) {
  const std::string book = data_dir() + "/pg1342_pride_and_prejudice.txt";
  SKIP_IF_MISSING(gpt2_vocab());
  SKIP_IF_MISSING(book);
  const std::string text = slurp(book);
  const std::string ts_json = models_dir() + "/tinystories-656k/tokenizer.json";
  GgufFile g(gpt2_vocab());
  std::vector<std::pair<std::string, std::unique_ptr<Tokenizer>>> toks;
  toks.emplace_back("gpt-2", tokenizer_from_gguf(g));
  if (exists(ts_json)) toks.emplace_back("tinystories-656k", load_hf_tokenizer(ts_json));
  for (const auto& [name, tok] : toks) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<int32_t> ids = tok->encode(text, false);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[ speed    ] %s: %zu bytes -> %zu tokens in %.3f s\n", name.c_str(), text.size(), ids.size(), s);
    EXPECT_LT(s, 5.0) << name;
    if (name == "gpt-2") {
      EXPECT_EQ(tok->decode(ids), text);  // byte-level: lossless
    }
  }
}

}  // namespace
}  // namespace slimkv::test
