// Hugging Face tokenizer.json: TinyStories-656K's SentencePiece-like BPE, synthetic GPT-2-style files, bad input.
#include <algorithm>

#include "core/check.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace slimkv::test {
namespace {

std::string ts_dir() { return models_dir() + "/tinystories-656k"; }
std::string ts_json() { return ts_dir() + "/tokenizer.json"; }

TEST(HfTokenizer, TinyStoriesEvalIds) {
  SKIP_IF_MISSING(ts_json());
  SKIP_IF_MISSING(golden_path());
  auto tok = load_hf_tokenizer(ts_json());
  EXPECT_EQ(tok->vocab_size(), 2048);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  std::vector<int32_t> ids = tok->encode(eval_text(), true);
  ASSERT_GE(ids.size(), 512u);
  ids.resize(512);
  EXPECT_EQ(ids, golden()["TinyStories-656K"]["eval_ids"].get<std::vector<int32_t>>());
}

TEST(HfTokenizer, TinyStoriesGreedyDecode) {
  SKIP_IF_MISSING(ts_json());
  SKIP_IF_MISSING(golden_path());
  auto tok = load_hf_tokenizer(ts_json());
  auto g = golden()["TinyStories-656K"];
  std::vector<int32_t> ids{tok->bos_id()};
  for (int32_t id : g["bos_only_greedy_60_ids"].get<std::vector<int32_t>>()) ids.push_back(id);
  std::string text = tok->decode(ids);
  std::string expected = g["bos_only_greedy_60_text"].get<std::string>();
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(expected.substr(0, text.size()), text) << "decoded: " << text;
  // Starting without BOS (prev = -1) strips the same leading space.
  EXPECT_EQ(tok->decode_token(-1, ids[1]), tok->decode_token(tok->bos_id(), ids[1]));
  EXPECT_EQ(tok->decode({tok->bos_id(), tok->eos_id()}), "");
}

TEST(HfTokenizer, TinyStoriesConventions) {
  SKIP_IF_MISSING(ts_json());
  auto from_text = hf_tokenizer_from_json(slurp(ts_json()), "tokenizer.json");  // no tokenizer_config.json
  EXPECT_EQ(from_text->bos_id(), 1);
  EXPECT_EQ(from_text->eos_id(), 2);
  EXPECT_EQ(from_text->encode("", true), (std::vector<int32_t>{1}));
  EXPECT_TRUE(from_text->encode("", false).empty());
  std::vector<int32_t> with = from_text->encode("Once upon a time", true);
  std::vector<int32_t> without = from_text->encode("Once upon a time", false);
  ASSERT_EQ(with.size(), without.size() + 1);
  EXPECT_EQ(with[0], 1);
  // Special tokens are not parsed from text.
  for (int32_t id : from_text->encode("<|end_story|>", false)) EXPECT_NE(id, 2);
  for (const std::string t : {"Hello world.\n\"Hi!\" she said.", "  spaces  inside ", "x"}) {
    EXPECT_EQ(from_text->decode(from_text->encode(t, true)), t) << escape(t);
  }
  // byte_fallback is on but this vocabulary has no <0xNN> pieces: other characters become <unk> (id 0), one per
  // run (fuse_unk), and <unk> decodes to nothing.
  std::vector<int32_t> ids = from_text->encode("caf\xC3\xA9 \xF0\x9F\xA6\x99\xE6\x97\xA5!", false);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 0), 2) << ids_str(ids);
  EXPECT_EQ(from_text->decode(ids), "caf !");
}

// A GPT-2-style tokenizer.json: ByteLevel pre-tokenizer and decoder, merges as [a, b] pairs.
const char* kByteLevelJson = R"({
  "added_tokens": [{"id": 7, "content": "<|endoftext|>", "special": true},
                   {"id": 8, "content": "<sep>", "special": false}],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": {"type": "ByteLevel"},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "vocab": {"h": 0, "i": 1, "\u0120": 2, "hi": 3, "\u0120h": 4, "\u0120hi": 5, "!": 6},
            "merges": MERGES}
})";

std::string byte_level_json(const std::string& merges) {
  std::string s = kByteLevelJson;
  return s.replace(s.find("MERGES"), 6, merges);
}

TEST(HfTokenizer, ByteLevelShape) {
  auto tok =
      hf_tokenizer_from_json(byte_level_json(R"([["\u0120", "h"], ["\u0120h", "i"], ["h", "i"]])"), "pairs.json");
  EXPECT_EQ(tok->vocab_size(), 9);
  EXPECT_EQ(tok->encode("hi hi!", false), (std::vector<int32_t>{3, 5, 6}));
  EXPECT_EQ(tok->encode("hi<sep>hi", false), (std::vector<int32_t>{3, 8, 3}));  // non-special added token
  EXPECT_EQ(tok->decode({3, 5, 6, 8, 7}), "hi hi!<sep>");
  EXPECT_EQ(tok->eos_id(), 7);
  // "a b" string merges give the same result.
  auto strings = hf_tokenizer_from_json(byte_level_json(R"(["\u0120 h", "\u0120h i", "h i"])"), "strings.json");
  EXPECT_EQ(strings->encode("hi hi!", false), (std::vector<int32_t>{3, 5, 6}));
  // Merge order decides: with "h i" first, " hi" ends as [" ", "hi"].
  auto other = hf_tokenizer_from_json(byte_level_json(R"(["h i", "\u0120 h", "\u0120h i"])"), "order.json");
  EXPECT_EQ(other->encode("hi hi!", false), (std::vector<int32_t>{3, 2, 3, 6}));
}

TEST(HfTokenizer, MetaspaceShape) {
  const char* j = R"({"pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"},
    "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"},
    "model": {"type": "BPE", "byte_fallback": false, "unk_token": "<unk>",
              "vocab": {"<unk>": 0, "\u2581": 1, "a": 2, "b": 3, "\u2581a": 4, "\u2581ab": 5},
              "merges": ["\u2581 a", "\u2581a b"]}})";
  auto tok = hf_tokenizer_from_json(j, "metaspace.json");
  EXPECT_EQ(tok->encode("ab a", false), (std::vector<int32_t>{5, 4}));
  EXPECT_EQ(tok->encode("abxb", false), (std::vector<int32_t>{5, 0, 3}));  // unknown 'x' -> <unk>
  EXPECT_EQ(tok->decode({5, 4}), "ab a");
}

TEST(HfTokenizer, BadInputIsAnError) {
  EXPECT_THROW(hf_tokenizer_from_json("", "empty.json"), Error);
  EXPECT_THROW(hf_tokenizer_from_json("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0", "cut.json"), Error);
  EXPECT_THROW(hf_tokenizer_from_json("\x01\x02garbage\xFF", "garbage.json"), Error);
  EXPECT_THROW(hf_tokenizer_from_json("[1, 2, 3]", "array.json"), Error);
  EXPECT_THROW(hf_tokenizer_from_json(R"({"model": 5})", "model.json"), Error);
  EXPECT_THROW(hf_tokenizer_from_json(R"({"model": {"type": "Unigram", "vocab": [["a"]]}})", "uni.json"), Error);
  EXPECT_THROW(hf_tokenizer_from_json(R"({"model": {"type": "BPE", "vocab": {"a": "x"}}})", "id.json"), Error);
  EXPECT_THROW(hf_tokenizer_from_json(R"({"model": {"type": "BPE", "vocab": {"a": -1}}})", "neg.json"), Error);
  EXPECT_THROW(hf_tokenizer_from_json(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}}})", "dup.json"), Error);
  EXPECT_THROW(hf_tokenizer_from_json(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}})", "m.json"),
               Error);
  EXPECT_THROW(hf_tokenizer_from_json(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [[1, 2]]}})", "p.json"),
               Error);
  EXPECT_THROW(
      hf_tokenizer_from_json(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "unk_token": "<unk>"}})", "u.json"),
      Error);
  EXPECT_THROW(hf_tokenizer_from_json(R"({"model": {"type": "BPE", "vocab": {"a": 0}},
                                          "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(("}}})", "re.json"),
               Error);
  EXPECT_THROW(hf_tokenizer_from_json(R"({"model": {"type": "BPE", "vocab": {"a": 0}},
                                          "normalizer": {"type": "Precompiled"}})", "pc.json"), Error);
  try {
    hf_tokenizer_from_json(R"({"model": {"type": "WordLevel", "vocab": {"a": 0}}})", "wl.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("wl.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("WordLevel"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_hf_tokenizer("/nonexistent/tokenizer.json"), Error);
}

TEST(HfTokenizer, TruncatedRealFileIsAnError) {
  SKIP_IF_MISSING(ts_json());
  const std::string full = slurp(ts_json());
  for (size_t cut : {size_t{0}, size_t{1}, full.size() / 3, full.size() / 2, full.size() - 2}) {
    EXPECT_THROW(hf_tokenizer_from_json(full.substr(0, cut), "cut"), Error) << cut;
  }
}

}  // namespace
}  // namespace slimkv::test
