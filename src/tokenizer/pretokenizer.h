// Pre-tokenizer: splits text into the words BPE merges inside, with an ordered list of PCRE2 regexes (UTF + UCP).
// Each regex splits every current piece into its matches and the gaps between them (llama.cpp's unicode_regex_split,
// HF's Split) and keeps them as its behavior says; pieces are never joined again. Owns: compiled patterns and the named presets (tokenizer.ggml.pre).
// Must not know: vocabularies, merges or the byte-level mapping.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace slimkv {

// What a split keeps of a regex's matches (Hugging Face SplitDelimiterBehavior); `invert` swaps matches and gaps.
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
struct SplitRule {
  std::string pattern;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  SplitRule() = default;
  SplitRule(std::string p, SplitBehavior b = SplitBehavior::kIsolated, bool inv = false)  // NOLINT: a regex is a rule
      : pattern(std::move(p)), behavior(b), invert(inv) {}
};

struct PreTokenizerPreset {
  std::vector<std::string> patterns;  // applied in order
  bool ignore_merges = false;         // llama3-style: a word that is itself a vocabulary piece is emitted whole
};

// The pre-tokenizer llama.cpp uses for a `tokenizer.ggml.pre` name ("gpt-2", "llama-bpe", "qwen2", ...).
// Throws Error naming the supported names for an unknown one.
PreTokenizerPreset pretokenizer_preset(std::string_view name);
std::vector<std::string> pretokenizer_preset_names();
// The GPT-2 regex (also what a tokenizer.json ByteLevel pre-tokenizer with use_regex=true applies).
const std::string& gpt2_pretokenizer_pattern();

class PreTokenizer {
 public:
  PreTokenizer() = default;                                    // no patterns: the whole text is one word
  explicit PreTokenizer(const std::vector<std::string>& patterns);  // throws Error on a pattern PCRE2 rejects
  explicit PreTokenizer(const std::vector<SplitRule>& rules);
  // Appends to `out` consecutive non-empty pieces of `text` that cover all of it. `text` must be valid UTF-8
  // (see sanitize_utf8). Thread-safe: the compiled patterns are shared read-only.
  void split(std::string_view text, std::vector<std::string_view>& out) const;
  bool empty() const { return patterns_.empty(); }

 private:
  struct Compiled;
  std::vector<std::shared_ptr<const Compiled>> patterns_;  // [rule]
  std::vector<SplitRule> rules_;
};

// Replaces every invalid UTF-8 sequence (stray continuation bytes, truncated or overlong sequences, surrogates,
// code points above U+10FFFF) by U+FFFD, one per offending byte, as llama.cpp does before pre-tokenizing.
std::string sanitize_utf8(std::string_view text);
// Byte length of the UTF-8 sequence a lead byte announces (1 for invalid lead bytes).
size_t utf8_sequence_length(unsigned char lead);

}  // namespace slimkv
