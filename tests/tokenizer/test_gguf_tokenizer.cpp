// tokenizer_from_gguf: real vocabularies (stories260K.gguf vs tok512.bin) and malformed metadata.
#include "core/check.h"
#include "formats/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace slimkv::test {
namespace {

std::unique_ptr<Tokenizer> from_writer(const GgufWriter& w) {
  std::vector<uint8_t> bytes = w.bytes();
  auto g = GgufFile::from_bytes(bytes, "test.gguf");
  return tokenizer_from_gguf(*g);
}

// A tiny valid `llama` vocabulary: <unk> <s> </s>, the 256 byte pieces, then a few merges' worth of pieces.
GgufWriter spm_writer(size_t drop_scores = 0, size_t drop_types = 0) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    tokens.push_back(buf);
    types.push_back(6);
  }
  for (const char* p : {"\xE2\x96\x81", "h", "i", "hi", "\xE2\x96\x81hi"}) {
    tokens.push_back(p);
    types.push_back(1);
  }
  tokens.push_back("<tool>");  // user-defined: matched verbatim in the text
  types.push_back(4);
  std::vector<float> scores(tokens.size(), 0.0f);
  scores[tokens.size() - 3] = -1.0f;  // "hi"
  scores[tokens.size() - 2] = -0.5f;  // "▁hi"
  scores.resize(scores.size() - drop_scores);
  types.resize(types.size() - drop_types);
  GgufWriter w;
  w.string("tokenizer.ggml.model", "llama");
  w.str_array("tokenizer.ggml.tokens", tokens);
  w.f32_array("tokenizer.ggml.scores", scores);
  w.i32_array("tokenizer.ggml.token_type", types);
  w.u32_value("tokenizer.ggml.bos_token_id", 1);
  w.u32_value("tokenizer.ggml.eos_token_id", 2);
  return w;
}

TEST(GgufTokenizer, SyntheticLlamaVocab) {
  auto tok = from_writer(spm_writer());
  const int32_t tool = tok->vocab_size() - 1, hi_marker = tool - 1;
  EXPECT_EQ(tok->encode("hi", true), (std::vector<int32_t>{1, hi_marker}));
  EXPECT_EQ(tok->decode(tok->encode("hi hi\xC3\xA9", true)), "hi hi\xC3\xA9");  // é through <0xC3><0xA9>
  EXPECT_EQ(tok->decode({1, 2, 0}), "");  // control and unknown print nothing
  // User-defined tokens are cut out first; each remaining piece gets the dummy prefix (llama.cpp).
  EXPECT_EQ(tok->encode("hi<tool>hi", false), (std::vector<int32_t>{hi_marker, tool, hi_marker}));
  EXPECT_EQ(tok->decode({hi_marker, tool, hi_marker}), "hi<tool> hi");
}

TEST(GgufTokenizer, MismatchedArraysAreErrors) {
  EXPECT_THROW(from_writer(spm_writer(1, 0)), Error);
  EXPECT_THROW(from_writer(spm_writer(0, 1)), Error);
  try {
    from_writer(spm_writer(3, 0));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.scores"), std::string::npos) << e.what();
  }
}

TEST(GgufTokenizer, BadMetadataIsAnError) {
  {
    GgufWriter w;  // no vocabulary at all
    w.string("general.name", "x");
    EXPECT_THROW(from_writer(w), Error);
  }
  {
    GgufWriter w;  // a model family we do not implement
    w.string("tokenizer.ggml.model", "t5");
    w.str_array("tokenizer.ggml.tokens", {"a", "b"});
    EXPECT_THROW(from_writer(w), Error);
  }
  {
    GgufWriter w;
    w.string("tokenizer.ggml.model", "llama");
    w.str_array("tokenizer.ggml.tokens", {});
    EXPECT_THROW(from_writer(w), Error);
  }
  {
    GgufWriter w;
    w.string("tokenizer.ggml.model", "llama");
    w.i32_array("tokenizer.ggml.tokens", {1, 2, 3});  // wrong type
    EXPECT_THROW(from_writer(w), Error);
  }
  {
    GgufWriter w;
    w.string("tokenizer.ggml.model", "llama");
    w.str_array("tokenizer.ggml.tokens", {"a", "b"});
    w.u32_value("tokenizer.ggml.bos_token_id", 7);  // outside the vocabulary
    EXPECT_THROW(from_writer(w), Error);
  }
  {
    GgufWriter w;  // gpt2 without merges
    w.string("tokenizer.ggml.model", "gpt2");
    w.str_array("tokenizer.ggml.tokens", {"a", "b", "ab"});
    EXPECT_THROW(from_writer(w), Error);
    w.str_array("tokenizer.ggml.merges", {"ab"});  // not "a b"
    EXPECT_THROW(from_writer(w), Error);
  }
  {
    GgufWriter w;
    w.string("tokenizer.ggml.model", "gpt2");
    w.str_array("tokenizer.ggml.tokens", {"a", "b", "ab"});
    w.str_array("tokenizer.ggml.merges", {"a b"});
    w.i32_array("tokenizer.ggml.token_type", {1, 1});  // one short
    EXPECT_THROW(from_writer(w), Error);
  }
  {
    GgufWriter w;
    w.string("tokenizer.ggml.model", "gpt2");
    w.string("tokenizer.ggml.pre", "no-such-pre");
    w.str_array("tokenizer.ggml.tokens", {"a", "b", "ab"});
    w.str_array("tokenizer.ggml.merges", {"a b"});
    try {
      from_writer(w);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no-such-pre"), std::string::npos) << e.what();
    }
  }
}

TEST(GgufTokenizer, SyntheticGpt2Vocab) {
  GgufWriter w;
  w.string("tokenizer.ggml.model", "gpt2");
  w.string("tokenizer.ggml.pre", "gpt-2");
  w.str_array("tokenizer.ggml.tokens", {"a", "b", "ab", "\xC4\xA0", "\xC4\xA0" "ab", "<|endoftext|>"});
  w.str_array("tokenizer.ggml.merges", {"a b", "\xC4\xA0 ab"});
  w.i32_array("tokenizer.ggml.token_type", {1, 1, 1, 1, 1, 3});
  w.u32_value("tokenizer.ggml.bos_token_id", 5);
  w.u32_value("tokenizer.ggml.eos_token_id", 5);
  w.boolean("tokenizer.ggml.add_bos_token", true);
  auto tok = from_writer(w);
  EXPECT_EQ(tok->encode("ab ab", false), (std::vector<int32_t>{2, 4}));
  EXPECT_EQ(tok->encode("ab ab", true), (std::vector<int32_t>{5, 2, 4}));
  EXPECT_EQ(tok->encode("<|endoftext|>", false).size(), 0u);  // control text is not parsed; its bytes have no pieces
  EXPECT_EQ(tok->decode({5, 2, 4}), "ab ab");
}

// stories260K.gguf holds the same vocabulary as tok512.bin (with U+2581 and <s>/</s>): same ids on the eval text.
TEST(GgufTokenizer, Stories260kGgufMatchesTok512) {
  const std::string gguf_path = models_dir() + "/stories260K/stories260K.gguf";
  const std::string bin_path = models_dir() + "/stories260K/tok512.bin";
  SKIP_IF_MISSING(gguf_path);
  SKIP_IF_MISSING(bin_path);
  SKIP_IF_MISSING(data_dir() + "/tinystories_valid_head.txt");
  GgufFile g(gguf_path);
  auto from_gguf = tokenizer_from_gguf(g);
  auto from_bin = load_llama2c_tokenizer(bin_path, 512);
  EXPECT_EQ(from_gguf->vocab_size(), 512);
  EXPECT_EQ(from_gguf->bos_id(), 1);
  EXPECT_EQ(from_gguf->eos_id(), 2);
  const std::string text = eval_text();
  EXPECT_EQ(from_gguf->encode(text, true), from_bin->encode(text, true));
  EXPECT_EQ(from_gguf->encode("Once upon a time", true), (std::vector<int32_t>{1, 403, 407, 261, 378}));
  std::vector<int32_t> ids = from_gguf->encode(text, true);
  EXPECT_EQ(from_gguf->decode(ids), text);
}

}  // namespace
}  // namespace slimkv::test
