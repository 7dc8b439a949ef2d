// UTF-8 text as Python's str sees it: a sequence of code points. Decoding never fails — a byte that is not valid
// UTF-8 becomes one code point of its own (0xDC80 + byte, Python's surrogateescape) and encodes back to that byte.
// Must not know: Values or templates.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace slimkv::jinja {

std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);
void utf8_append(std::string& out, char32_t c);
bool is_ascii(std::string_view s);
size_t utf8_length(std::string_view s);  // code points

bool py_isspace(char32_t c);  // str.isspace for one character
char32_t py_lower(char32_t c);  // ASCII, Latin-1, Greek and Cyrillic ranges; others unchanged
char32_t py_upper(char32_t c);
bool py_iscased_upper(char32_t c);
bool py_iscased_lower(char32_t c);
bool py_isalpha(char32_t c);
bool py_isdigit(char32_t c);
bool py_isprintable(char32_t c);

}  // namespace slimkv::jinja
