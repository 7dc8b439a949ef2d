// Fuzz target: GGUF container parser, then the GGUF vocabulary loader, then the model families' hyper-parameter
// readers and weight binding (shapes, fused and expert tensors). Any input must end in success or Error.
#include "core/check.h"
#include "formats/gguf_file.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    std::shared_ptr<slimkv::GgufFile> g = slimkv::GgufFile::from_bytes({data, size}, "fuzz.gguf");
    try {
      slimkv::gguf_model_weights(g);
    } catch (const slimkv::Error&) {
    }
    if (g->find("tokenizer.ggml.model")) {
      auto tok = slimkv::tokenizer_from_gguf(*g);
      auto ids = tok->encode("Hello world, \xE4\xBD\xA0\xE5\xA5\xBD!", true);
      tok->decode(ids);
    }
  } catch (const slimkv::Error&) {
  }
  return 0;
}
