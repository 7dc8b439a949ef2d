// "Plain text": printable ASCII but '"' and '\' (no controls, no DEL) and well-formed multi-byte UTF-8 characters,
// possibly ending in the first bytes of one more character — what most tokens are, and what string content in
// most grammars accepts. The mask walk allows a whole trie subtree of plain tokens at once from a parse set that
// accepts every plain text of that many characters. Owns: the definition, counted from both sides (tokens, sets).
// Must not know: tries, parse stacks, JSON.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

namespace slimkv::grammar {

inline constexpr int kMaxPlainChars = 64;  // longer plain texts are not counted (no shortcut for them)

// Plain text of every character, or its ASCII part only (a cheaper depth to follow: one set per character).
enum class PlainAlphabet { kAscii, kUtf8 };

// The characters in `bytes` (a trailing partial character counts as one) when it is plain text of the alphabet of
// at most kMaxPlainChars characters; -1 otherwise (an empty text is 0).
int plain_char_count(std::string_view bytes, PlainAlphabet alphabet);

// One shape of a plain character: its bytes, each within [lo, hi].
struct PlainCharShape {
  uint8_t length;
  uint8_t lo[4], hi[4];
};
// Every plain character of the alphabet as shapes: the ASCII ranges (one byte each), then the well-formed UTF-8
// sequences.
std::span<const PlainCharShape> plain_char_shapes(PlainAlphabet alphabet);

}  // namespace slimkv::grammar
