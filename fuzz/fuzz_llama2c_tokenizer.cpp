// Fuzz target: llama2.c tokenizer.bin parser, then encode/decode with the parsed vocabulary.
#include "core/check.h"
// The first byte picks the vocabulary size.
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  int32_t vocab = 1 + data[0] * 4;
  try {
    auto tok = slimkv::llama2c_tokenizer_from_bytes({data + 1, size - 1}, vocab, "fuzz.tok");
    auto ids = tok->encode("Once upon a time \xF0\x9F\x98\x80", true);
    tok->decode(ids);
  } catch (const slimkv::Error&) {
  }
  return 0;
}
