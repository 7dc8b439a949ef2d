// A tokenizer whose token id is one byte (ids 0..255): fuzz targets stream arbitrary bytes through text code with it.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace slimkv::fuzz {

class ByteTokenizer : public Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view, bool) const override { return {}; }
  std::string decode_token(int32_t, int32_t id) const override { return std::string(1, static_cast<char>(id)); }
  int32_t vocab_size() const override { return 256; }
};

}  // namespace slimkv::fuzz
