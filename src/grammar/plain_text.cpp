#include "grammar/plain_text.h"

#include <array>

namespace slimkv::grammar {
namespace {

constexpr std::array<PlainCharShape, 11> kShapes = {{
    {1, {0x20}, {0x21}},
    {1, {0x23}, {0x5B}},
    {1, {0x5D}, {0x7E}},
    {2, {0xC2, 0x80}, {0xDF, 0xBF}},
    {3, {0xE0, 0xA0, 0x80}, {0xE0, 0xBF, 0xBF}},
    {3, {0xE1, 0x80, 0x80}, {0xEC, 0xBF, 0xBF}},
    {3, {0xED, 0x80, 0x80}, {0xED, 0x9F, 0xBF}},
    {3, {0xEE, 0x80, 0x80}, {0xEF, 0xBF, 0xBF}},
    {4, {0xF0, 0x90, 0x80, 0x80}, {0xF0, 0xBF, 0xBF, 0xBF}},
    {4, {0xF1, 0x80, 0x80, 0x80}, {0xF3, 0xBF, 0xBF, 0xBF}},
    {4, {0xF4, 0x80, 0x80, 0x80}, {0xF4, 0x8F, 0xBF, 0xBF}},
}};

constexpr size_t kAsciiShapes = 3;

// The shape whose first byte range holds `b`, or nullptr.
const PlainCharShape* shape_of(uint8_t b, PlainAlphabet alphabet) {
  for (const PlainCharShape& s : plain_char_shapes(alphabet))
    if (b >= s.lo[0] && b <= s.hi[0]) return &s;
  return nullptr;
}

}  // namespace

std::span<const PlainCharShape> plain_char_shapes(PlainAlphabet alphabet) {
  return std::span<const PlainCharShape>(kShapes).first(alphabet == PlainAlphabet::kAscii ? kAsciiShapes
                                                                                          : kShapes.size());
}

int plain_char_count(std::string_view bytes, PlainAlphabet alphabet) {
  int chars = 0;
  for (size_t at = 0; at < bytes.size();) {
    const PlainCharShape* s = shape_of(static_cast<uint8_t>(bytes[at]), alphabet);
    if (!s) return -1;
    size_t k = 1;
    for (; k < s->length && at + k < bytes.size(); ++k) {
      const auto b = static_cast<uint8_t>(bytes[at + k]);
      if (b < s->lo[k] || b > s->hi[k]) return -1;
    }
    if (++chars > kMaxPlainChars) return -1;
    at += k;  // a partial character only at the end
  }
  return chars;
}

}  // namespace slimkv::grammar
