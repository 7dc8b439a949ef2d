// Real vocabularies against Hugging Face's ids: ../shared/data/real-tokenizers/ — 7 tokenizer.json files (Llama 3
// with and without BOS, Qwen3, DeepSeek-V3, Gemma 3, gpt-oss, Mistral-7B), 64 stress strings, each family's ids
// without special tokens, with them, with special-token parsing off, and the decoded text. One test per family.
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>

#include "formats/gguf_file.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/gguf_vocab_writer.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace slimkv::test {
namespace {

std::string real_dir() { return data_dir() + "/real-tokenizers"; }

struct RealCase {
  int id;
  std::string text;
};

std::vector<RealCase> real_cases() {
  std::vector<RealCase> cases;
  std::istringstream lines(slurp(real_dir() + "/cases.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    cases.push_back({j["id"].get<int>(), j["text"].get<std::string>()});
  }
  return cases;
}

std::map<int, nlohmann::json> expected_for(const std::string& family) {
  std::map<int, nlohmann::json> out;
  std::istringstream lines(slurp(real_dir() + "/" + family + "/expected.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    out[j["id"].get<int>()] = j;
  }
  return out;
}

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size() && i < 40; ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return ids.size() > 40 ? s + " ..." : s;
}

// Every field of every case; the first few differences are printed in full.
void check_family(const Tokenizer& tok, const std::string& family) {
  const auto cases = real_cases();
  const auto expected = expected_for(family);
  ASSERT_EQ(cases.size(), 64u);
  int mismatches = 0;
  auto report = [&](const RealCase& c, const char* field, const std::string& want, const std::string& got) {
    if (++mismatches <= 8) {
      ADD_FAILURE() << family << " case " << c.id << " " << field << "\n text: " << escape(c.text)
                    << "\n want: " << escape(want) << "\n got:  " << escape(got);
    }
  };
  for (const RealCase& c : cases) {
    ASSERT_TRUE(expected.count(c.id)) << family << " has no expectation for case " << c.id;
    const auto& e = expected.at(c.id);
    const auto want_plain = e["ids_no_special"].get<std::vector<int32_t>>();
    const auto want_bos = e["ids_special"].get<std::vector<int32_t>>();
    const auto want_split = e["ids_split_special"].get<std::vector<int32_t>>();
    const auto plain = tok.encode(c.text, EncodeOptions{false, true});
    const auto with_special = tok.encode(c.text, EncodeOptions{true, true});
    const auto split = tok.encode(c.text, EncodeOptions{false, false});
    if (plain != want_plain) report(c, "ids_no_special", show(want_plain), show(plain));
    if (with_special != want_bos) report(c, "ids_special", show(want_bos), show(with_special));
    if (split != want_split) report(c, "ids_split_special", show(want_split), show(split));
    const std::string decoded = tok.decode(want_plain, DecodeOptions{false});
    if (decoded != e["decoded"].get<std::string>()) report(c, "decoded", e["decoded"].get<std::string>(), decoded);
  }
  EXPECT_EQ(mismatches, 0) << family << ": fields differing from Hugging Face's (4 per case, 64 cases)";
}

class RealTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(RealTokenizer, JsonMatchesHuggingFace) {
  const std::string dir = real_dir() + "/" + GetParam();
  SKIP_IF_MISSING(dir + "/tokenizer.json.gz");
  auto tok = load_hf_tokenizer(dir);  // the folder: tokenizer.json.gz + tokenizer_config.json
  check_family(*tok, GetParam());
}

// The same vocabulary written as GGUF (tokenizer.ggml.*, slimkv's writer) and read back gives the same ids.
TEST_P(RealTokenizer, GgufMatchesHuggingFace) {
  const std::string dir = real_dir() + "/" + GetParam();
  SKIP_IF_MISSING(dir + "/tokenizer.json.gz");
  auto json_tok = load_hf_tokenizer(dir);
  const auto* bpe = dynamic_cast<const BpeTokenizer*>(json_tok.get());
  ASSERT_NE(bpe, nullptr);
  slimkv::GgufWriter w;
  write_bpe_vocab(w, bpe->config());
  const std::string path = std::filesystem::temp_directory_path().string() + "/slimkv_vocab_" + GetParam() + "_" +
                           std::to_string(::getpid()) + ".gguf";
  w.write(path);
  GgufFile gguf(path);
  std::filesystem::remove(path);
  auto tok = tokenizer_from_gguf(gguf);
  EXPECT_EQ(tok->bos_id(), json_tok->bos_id());
  EXPECT_EQ(tok->eos_id(), json_tok->eos_id());
  check_family(*tok, GetParam());
}

// A reply parser needs some special tokens' text (gpt-oss's harmony markers): StreamDecoder::spell prints it.
TEST(RealTokenizerStream, SpelledSpecialTokensPrintTheirText) {
  const std::string dir = real_dir() + "/gpt_oss";
  SKIP_IF_MISSING(dir + "/tokenizer.json.gz");
  auto tok = load_hf_tokenizer(dir);
  const std::string marker = "<|channel|>";  // a special token of o200k_harmony
  const auto ids = tok->encode("hi" + marker + "x", EncodeOptions{false, true});
  ASSERT_EQ(ids.size(), 3u);
  std::string plain, spelled;
  StreamDecoder a(*tok), b(*tok);
  b.spell({ids[1]});
  for (int32_t id : ids) {
    plain += a.push(id);
    spelled += b.push(id);
  }
  EXPECT_EQ(plain, "hix");  // special tokens print nothing by default
  EXPECT_EQ(spelled, "hi" + marker + "x");
}

INSTANTIATE_TEST_SUITE_P(Families, RealTokenizer,
                         ::testing::Values("llama3", "llama3_nobos", "qwen3", "deepseek_v3", "gemma3", "gpt_oss",
                                           "mistral"));

}  // namespace
}  // namespace slimkv::test
