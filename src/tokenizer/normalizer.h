// Hugging Face normalizers as an ordered list of steps applied to each stretch of text between added tokens:
// Unicode forms (NFC / NFD / NFKC / NFKD, by utf8proc), Lowercase, Strip, Replace (a string or a regex), Prepend,
// StripAccents and BertNormalizer's clean_text / handle_chinese_chars.
// Owns: the steps and their compiled regexes. Must not know: tokenizer.json (the loader builds the steps) or models.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace slimkv {

struct NormalizeStep {
  enum Kind {
    kNfc, kNfd, kNfkc, kNfkd, kLowercase, kStrip, kReplace, kPrepend,
    kStripAccents,  // drop nonspacing marks (Mn); after kNfd this strips accents
    kCleanText,     // drop NUL, U+FFFD and other (C*) characters but \t \n \r; whitespace becomes ' '
    kSpaceCjk,      // a space on either side of each CJK ideograph (BertNormalizer handle_chinese_chars)
  } kind;
  std::string pattern;         // kReplace: the text to find (a PCRE2 regex when `regex`)
  bool regex = false;
  std::string content;         // kReplace: the replacement; kPrepend: the prefix
  bool strip_left = true, strip_right = true;  // kStrip
  NormalizeStep(Kind k = kNfc, std::string pat = "", bool is_regex = false, std::string with = "")  // NOLINT
      : kind(k), pattern(std::move(pat)), regex(is_regex), content(std::move(with)) {}
};

class Normalizer {
 public:
  Normalizer() = default;
  explicit Normalizer(std::vector<NormalizeStep> steps);  // throws Error on a regex PCRE2 rejects
  bool empty() const { return steps_.empty(); }
  std::string apply(std::string_view text) const;  // text: valid UTF-8

 private:
  struct Compiled;
  std::vector<NormalizeStep> steps_;
  std::vector<std::shared_ptr<const Compiled>> regexes_;  // [step] for regex Replace steps, else null
};

}  // namespace slimkv
