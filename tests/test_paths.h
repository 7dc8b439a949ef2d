// Paths tests use: the repository root and ../shared beside it (models and data are never copied in).
#pragma once
#include <filesystem>
#include <string>

namespace slimkv::test {
inline std::string repo_dir() { return SLIMKV_SOURCE_DIR; }
inline std::string shared_dir() { return std::string(SLIMKV_SOURCE_DIR) + "/../shared"; }
inline std::string models_dir() { return shared_dir() + "/models"; }
inline std::string data_dir() { return shared_dir() + "/data"; }
inline bool exists(const std::string& p) { return std::filesystem::exists(p); }
}  // namespace slimkv::test
