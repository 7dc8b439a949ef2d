// Paths tests use: the repository root and ../shared beside it (models and data are never copied in).
#pragma once
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
}  // namespace slimkv::test
