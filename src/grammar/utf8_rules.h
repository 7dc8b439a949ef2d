// UTF-8 as grammar pieces: encoding and decoding code points, the multi-byte character sequences, and a code
// point written as JSON string content. Owns: these helpers. Must not know: JSON schema, regex syntax, tokens.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_builder.h"

namespace slimkv::grammar {

std::string utf8_encode(uint32_t cp);
// Decodes the first code point of `s` into cp; returns its byte length, 0 when malformed or empty.
size_t utf8_decode(std::string_view s, uint32_t& cp);
// Every well-formed multi-byte UTF-8 character (2-4 bytes), as alternatives.
std::vector<Seq> utf8_multibyte_seqs(GrammarBuilder& b);
// One code point as JSON string content: '"' and '\' escaped, control characters as \n \t ... or \u00XX.
std::string json_escape_codepoint(uint32_t cp);

}  // namespace slimkv::grammar
