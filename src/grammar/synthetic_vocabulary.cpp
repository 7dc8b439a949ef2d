#include "grammar/synthetic_vocabulary.h"

#include <algorithm>
#include <random>
#include <set>

#include "core/check.h"

namespace slimkv::grammar {
namespace {

const std::vector<std::string>& common_words() {
  static const std::vector<std::string> w = {
      "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on", "not", "he",
      "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they", "you", "were", "their",
      "one", "all", "we", "can", "her", "has", "there", "been", "if", "more", "when", "will", "would", "who", "so",
      "name", "age", "email", "id", "type", "value", "price", "items", "true", "false", "null", "description",
      "arguments", "properties", "title", "city", "address", "tags", "status", "count", "data", "result"};
  return w;
}

}  // namespace

std::vector<std::string> synthetic_token_bytes(size_t n, uint64_t seed) {
  SLIMKV_CHECK(n >= 300, "a synthetic vocabulary needs at least 300 tokens (got {})", n);
  std::mt19937_64 rng(seed);
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& s) {
    if (!s.empty() && out.size() + 1 < n && seen.insert(s).second) out.push_back(s);
  };
  for (int b = 0; b < 256; ++b) add(std::string(1, static_cast<char>(b)));
  for (const char* p : {"\"", "{", "}", "[", "]", "\":", "\",", "\": \"", "\", \"", "{\"", "\"}", "},", "],", ": ",
                        ", ", "  ", "    ", "\n", "\n  ", "\n    ", "\\n", "\\\"", "\\u", "true", "false", "null",
                        "0", "00", "000", "10", "100", "2024", "-", ".", "e+", "\u00e9", "\u4e2d\u6587", "\xf0\x9f\x98\x80"})
    add(p);
  for (const std::string& w : common_words()) {
    add(w), add(" " + w), add("\"" + w), add(w + "\""), add("\"" + w + "\":");
    std::string cap = w;
    cap[0] = static_cast<char>(cap[0] - 32);
    add(cap), add(" " + cap);
  }
  // The rest: mostly lowercase letters, some capitals, digits, spaces and punctuation, a few raw UTF-8 bytes.
  const std::string lower = "etaoinshrdlcumwfgypbvkjxqz", punct = ".,:;\"'{}[]()-_/\\!?#$%&*+=<>@|~`^";
  std::uniform_int_distribution<int> len_dist(1, 12), pick(0, 99);
  while (out.size() + 1 < n) {
    const int len = len_dist(rng);
    std::string s;
    if (pick(rng) < 40) s += ' ';
    while (static_cast<int>(s.size()) < len) {
      const int r = pick(rng);
      if (r < 70) s += lower[std::min<size_t>(static_cast<size_t>(pick(rng) % 26), static_cast<size_t>(rng() % 26))];
      else if (r < 78) s += static_cast<char>('A' + rng() % 26);
      else if (r < 86) s += static_cast<char>('0' + rng() % 10);
      else if (r < 90) s += ' ';
      else if (r < 97) s += punct[rng() % punct.size()];
      else s += static_cast<char>(0x80 + rng() % 0x80);
    }
    add(s);
  }
  out.push_back("");  // the EOS id
  return out;
}

}  // namespace slimkv::grammar
