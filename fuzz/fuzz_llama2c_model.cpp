// Fuzz target: llama2.c checkpoint header and size validation (weights are views, never copied).
#include "core/check.h"
#include "model/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto m = slimkv::llama2c_model_from_bytes({data, size}, "fuzz.bin");
    m->config.validate();
  } catch (const slimkv::Error&) {
  }
  return 0;
}
