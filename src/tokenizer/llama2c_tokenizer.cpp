// llama2.c tokenizer.bin loader: int32 max_token_length, then per id (f32 score, int32 len, bytes).
#include "core/byte_reader.h"
#include "core/mapped_file.h"
#include "tokenizer/spm_tokenizer.h"

namespace slimkv {

std::unique_ptr<Tokenizer> llama2c_tokenizer_from_bytes(std::span<const uint8_t> bytes, int32_t vocab_size,
                                                        const std::string& what) {
  SLIMKV_CHECK(vocab_size > 0 && vocab_size <= (1 << 22), "{}: bad vocabulary size {}", what, vocab_size);
  ByteReader r(bytes, what);
  int32_t max_len = r.read<int32_t>("max_token_length");
  SLIMKV_CHECK(max_len > 0 && max_len <= 4096, "{}: bad max_token_length {} (not a llama2.c tokenizer?)", what,
               max_len);
  SLIMKV_CHECK(static_cast<uint64_t>(vocab_size) * 8 <= r.remaining(),
               "{}: file too small for {} tokens (does the tokenizer match the model?)", what, vocab_size);
  SpmVocab v;
  v.pieces.reserve(vocab_size);
  v.scores.reserve(vocab_size);
  for (int32_t i = 0; i < vocab_size; ++i) {
    v.scores.push_back(r.read<float>("token score"));
    int32_t len = r.read<int32_t>("token length");
    SLIMKV_CHECK(len >= 0 && len <= max_len, "{}: token {} has length {} (max_token_length {})", what, i, len,
                 max_len);
    v.pieces.emplace_back(r.read_bytes(static_cast<uint64_t>(len), "token bytes"));
  }
  v.space_marker = " ";
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  return std::make_unique<SpmTokenizer>(std::move(v));
}

std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const std::string& path, int32_t vocab_size) {
  MappedFile f(path);
  return llama2c_tokenizer_from_bytes(f.bytes(), vocab_size, path);
}

}  // namespace slimkv
