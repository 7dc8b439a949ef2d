// Paths tests use: the repository root and ../shared beside it (models and data are never copied in).
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

namespace slimkv::test {
inline std::string repo_dir() { return SLIMKV_SOURCE_DIR; }
inline std::string shared_dir() { return std::string(SLIMKV_SOURCE_DIR) + "/../shared"; }
inline std::string models_dir() { return shared_dir() + "/models"; }
// The default test model (a llama2.c checkpoint, 260K parameters).
inline const std::string k260 = models_dir() + "/stories260K/stories260K.bin";
inline std::string data_dir() { return shared_dir() + "/data"; }
inline bool exists(const std::string& p) { return std::filesystem::exists(p); }
// In CI (the CI variable set, as .ci/run's environment has it) a missing input fails the test; elsewhere it skips.
inline bool in_ci() { return std::getenv("CI") != nullptr; }
}  // namespace slimkv::test

// Skips the test when `path` is absent (fails it under CI: there a missing input is an error, not a pass).
#define SKIP_IF_MISSING(path)                                                                            \
  do {                                                                                                   \
    if (!::slimkv::test::exists(path)) {                                                                 \
      if (::slimkv::test::in_ci()) FAIL() << "missing " << (path) << " (CI is set: inputs must be present)"; \
      GTEST_SKIP() << "missing " << (path);                                                              \
    }                                                                                                    \
  } while (0)
