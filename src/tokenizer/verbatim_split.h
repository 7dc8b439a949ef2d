// Cuts tokens that must match verbatim (user-defined / non-special added tokens) out of a text, longest first,
// as llama.cpp's tokenizer_st_partition does; the pieces between them are encoded normally.
// Must not know: how a tokenizer encodes the remaining text.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace slimkv {

struct TextFragment {
  int32_t token;  // the verbatim token id, or -1 for text to encode
  size_t begin, len;  // byte range in the input text
};

// ids: verbatim tokens in the order to try (longest first); pieces: the vocabulary's texts by id.
std::vector<TextFragment> split_verbatim(std::string_view text, const std::vector<int32_t>& ids,
                                         const std::vector<std::string>& pieces);

}  // namespace slimkv
