// Fuzz target: safetensors header and tensor-range validation.
#include "core/check.h"
#include "formats/safetensors_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    slimkv::SafetensorsFile::from_bytes({data, size}, "fuzz.safetensors");
  } catch (const slimkv::Error&) {
  }
  return 0;
}
