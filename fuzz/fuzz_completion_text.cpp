// Fuzz target: the streaming state of one choice's text (CompletionText: UTF-8 never split, stop strings matched
// across token boundaries, held-back text) against what it must equal. Input: up to 3 stop strings (a length byte
// each; valid UTF-8, as JSON gives them), then token ids (one byte each, a byte tokenizer, so UTF-8 sequences arrive split in every way). Checked:
// the pieces released equal text(); without a stop the text equals the same tokens decoded with no stop strings;
// with a stop the released text is a prefix of that decoding, the rest begins with a stop string, and no stop
// string occurs inside what was released. A violation aborts (a crash to libFuzzer).
#include <cstdlib>
#include <string>
#include <vector>

#include "byte_tokenizer.h"
#include "server/completion_text.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

// Stop strings reach CompletionText from parsed JSON, which only holds valid UTF-8.
bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    }
    i += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  size_t i = 0;
  std::vector<std::string> stops;
  const size_t nstops = size > 0 ? data[i++] % 4 : 0;
  for (size_t k = 0; k < nstops && i < size; ++k) {
    const size_t len = 1 + data[i++] % 8;
    if (i + len > size) break;
    stops.emplace_back(reinterpret_cast<const char*>(data + i), len);
    i += len;
    if (!valid_utf8(stops.back())) return 0;
  }
  slimkv::fuzz::ByteTokenizer tok;
  slimkv::CompletionText plain(tok, -1, {});
  slimkv::CompletionText out(tok, -1, stops);
  std::string pieces, full;
  for (size_t k = i; k < size; ++k) {
    full += plain.push(data[k]);
    if (!out.stopped()) pieces += out.push(data[k]);
  }
  full += plain.finish();
  check(!plain.stopped() && plain.text() == full);
  if (!out.stopped()) pieces += out.finish();
  check(pieces == out.text());
  const std::string& got = out.text();
  for (const auto& s : stops) check(got.find(s) == std::string::npos);
  if (!out.stopped()) {
    check(got == full);
  } else {
    check(full.compare(0, got.size(), got) == 0);
    bool begins_with_stop = false;
    for (const auto& s : stops) begins_with_stop |= full.compare(got.size(), s.size(), s) == 0;
    check(begins_with_stop);
  }
  return 0;
}
