// Hugging Face decoders: a chain of steps over the token strings of a whole sequence (ByteLevel, Replace,
// ByteFallback, Fuse, Strip, Metaspace, WordPiece), joined at the end; transformers' clean_up_tokenization_spaces; UTF-8
// repair as Rust's from_utf8_lossy. Owns: the steps. Must not know: vocabularies or tokenizer.json.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace slimkv {

struct DecodeStep {
  enum Kind { kByteLevel, kReplace, kByteFallback, kFuse, kStrip, kMetaspace, kWordPiece } kind;
  std::string pattern;       // kReplace: the text to find; kMetaspace: the replacement character; kWordPiece: prefix
  std::string content;       // kReplace: what replaces it; kStrip: the character stripped
  int start = 0, stop = 0;   // kStrip: at most this many `content` characters off each token's start / end
  bool prepend = true;       // kMetaspace: a prepend scheme other than "never" (the first token's marker drops)
  bool cleanup = false;      // kWordPiece: each token through wordpiece_cleanup
  DecodeStep(Kind k = kByteLevel, std::string pat = "", std::string with = "")  // NOLINT: a kind is a step
      : kind(k), pattern(std::move(pat)), content(std::move(with)) {}
};

// Runs the chain over `tokens` and joins the result.
std::string run_decoders(const std::vector<DecodeStep>& steps, std::vector<std::string> tokens);
// transformers' clean_up_tokenization: " ." -> "." and the like (ten fixed replacements, in order).
std::string clean_up_tokenization(std::string text);
// The Hugging Face WordPiece decoder's per-token cleanup: clean_up_tokenization's rules plus " do not" -> " don't".
std::string wordpiece_cleanup(std::string text);
// Invalid UTF-8 replaced by U+FFFD, one per maximal invalid subpart (Rust's String::from_utf8_lossy, WHATWG).
std::string utf8_lossy(std::string_view bytes);

}  // namespace slimkv
