// Fuzz target: Hugging Face tokenizer.json loader, then encode/decode.
#include "core/check.h"
#include <string_view>

#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto tok = slimkv::hf_tokenizer_from_json(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    auto ids = tok->encode("Once upon a time, caf\xC3\xA9!", true);
    tok->decode(ids);
    ids = tok->encode("<s>caf\xC3\xA9 <|im_start|>x\xE2\x96\x81 \xF0\x9F\x98\x80", slimkv::EncodeOptions{true, true});
    tok->decode(ids, slimkv::DecodeOptions{false});
  } catch (const slimkv::Error&) {
  }
  return 0;
}
