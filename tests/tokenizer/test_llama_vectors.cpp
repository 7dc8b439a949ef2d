// llama.cpp's tokenizer test vectors (../shared/data/tokenizer-tests): encode without special tokens and compare.
#include "formats/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace slimkv::test {
namespace {

std::string vectors_dir() { return data_dir() + "/tokenizer-tests"; }

struct VectorResult {
  size_t passed = 0, total = 0;
  std::string failures;  // one block per mismatching case
};

VectorResult run_vectors(const std::string& name) {
  const std::string base = vectors_dir() + "/ggml-vocab-" + name + ".gguf";
  GgufFile gguf(base);
  auto tok = tokenizer_from_gguf(gguf);
  VectorResult r;
  for (const auto& c : read_vectors(base + ".inp", base + ".out")) {
    ++r.total;
    std::vector<int32_t> got = tok->encode(c.text, /*add_special=*/false);
    if (got == c.ids) {
      ++r.passed;
      continue;
    }
    r.failures += "  input:    '" + escape(c.text) + "'\n  expected: " + ids_str(c.ids) + "\n  got:      " +
                  ids_str(got) + "\n";
  }
  return r;
}

void expect_all_pass(const std::string& name) {
  const std::string base = vectors_dir() + "/ggml-vocab-" + name + ".gguf";
  SKIP_IF_MISSING(base);
  VectorResult r = run_vectors(name);
  EXPECT_GT(r.total, 0u);
  EXPECT_EQ(r.passed, r.total) << name << ": " << r.total - r.passed << " of " << r.total << " cases differ:\n"
                               << r.failures;
}

// Required by the brief: the SentencePiece families and GPT-2.
TEST(LlamaVectors, LlamaSpm) { expect_all_pass("llama-spm"); }
TEST(LlamaVectors, Phi3) { expect_all_pass("phi-3"); }
TEST(LlamaVectors, Gpt2) { expect_all_pass("gpt-2"); }
// The other byte-level vocabularies and their pre-tokenizers; all of them pass as well.
TEST(LlamaVectors, DeepseekCoder) { expect_all_pass("deepseek-coder"); }
TEST(LlamaVectors, DeepseekLlm) { expect_all_pass("deepseek-llm"); }
TEST(LlamaVectors, Falcon) { expect_all_pass("falcon"); }
TEST(LlamaVectors, Mpt) { expect_all_pass("mpt"); }
TEST(LlamaVectors, Starcoder) { expect_all_pass("starcoder"); }
TEST(LlamaVectors, Refact) { expect_all_pass("refact"); }

}  // namespace
}  // namespace slimkv::test
