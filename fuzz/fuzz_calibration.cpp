// Fuzz target: calibration file parser (magic, JSON header, sizes, trailing bytes). Writes the input to a temp
// file because Calibration::load maps a path.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "compress/calibration.h"
#include "core/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/slimkv_fuzz_calib_" + std::to_string(::getpid());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    slimkv::Calibration c = slimkv::Calibration::load(path);
    (void)c.explained(0, 1, true);
  } catch (const slimkv::Error&) {
  }
  return 0;
}
