// Fuzz target: Hugging Face tokenizer.json loader, then encode/decode.
#include "core/check.h"
#include <string_view>

#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto tok = slimkv::hf_tokenizer_from_json(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    auto ids = tok->encode("Once upon a time, caf\xC3\xA9!", true);
    tok->decode(ids);
  } catch (const slimkv::Error&) {
  }
  return 0;
}
