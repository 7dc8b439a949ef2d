// Helpers shared by the tokenizer tests: reading ../shared files (skipping when absent), the golden reference,
// llama.cpp's tokenizer test-vector files and a tiny in-memory GGUF writer.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.h"

namespace slimkv::test {

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}


inline std::string golden_path() { return models_dir() + "/golden_reference.json"; }
inline nlohmann::json golden() { return nlohmann::json::parse(slurp(golden_path())); }

// The first `n` UTF-8 characters of `s`.
inline std::string utf8_prefix(const std::string& s, size_t n) {
  size_t i = 0;
  for (size_t k = 0; k < n && i < s.size(); ++k) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
  }
  return s.substr(0, i);
}

// The golden "eval" text: the first 3000 characters of tinystories_valid_head.txt.
inline std::string eval_text() { return utf8_prefix(slurp(data_dir() + "/tinystories_valid_head.txt"), 3000); }

struct VectorCase {
  std::string text;
  std::vector<int32_t> ids;
};

// llama.cpp test-tokenizer-0 format: tests separated by "\n__ggml_vocab_test__\n", one line of ids per test.
inline std::vector<VectorCase> read_vectors(const std::string& inp_path, const std::string& out_path) {
  const std::string raw = slurp(inp_path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  for (size_t pos = 0; pos < raw.size();) {
    size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      inputs.push_back(raw.substr(pos));
      break;
    }
    inputs.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<VectorCase> cases;
  std::ifstream out(out_path);
  std::string line;
  for (size_t i = 0; std::getline(out, line); ++i) {
    VectorCase c;
    c.text = i < inputs.size() ? inputs[i] : "";
    std::istringstream ls(line);
    for (int64_t id; ls >> id;) c.ids.push_back(static_cast<int32_t>(id));
    cases.push_back(std::move(c));
  }
  EXPECT_EQ(cases.size(), inputs.size()) << inp_path << ": input and output test counts differ";
  return cases;
}

inline std::string escape(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (c == '\n') o += "\\n";
    else if (c == '\t') o += "\\t";
    else if (c == '\r') o += "\\r";
    else o += static_cast<char>(c);
  }
  return o;
}

inline std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

// Minimal GGUF v3 writer for building (possibly malformed) vocabularies in memory.
class GgufWriter {
 public:
  void str_array(const std::string& key, const std::vector<std::string>& v) {
    header(key, 9);
    u32(8);
    u64(v.size());
    for (const auto& s : v) str(s);
    ++n_kv_;
  }
  void f32_array(const std::string& key, const std::vector<float>& v) {
    header(key, 9);
    u32(6);
    u64(v.size());
    for (float f : v) raw(&f, 4);
    ++n_kv_;
  }
  void i32_array(const std::string& key, const std::vector<int32_t>& v) {
    header(key, 9);
    u32(5);
    u64(v.size());
    for (int32_t x : v) raw(&x, 4);
    ++n_kv_;
  }
  void string(const std::string& key, const std::string& v) {
    header(key, 8);
    str(v);
    ++n_kv_;
  }
  void u32_value(const std::string& key, uint32_t v) {
    header(key, 4);
    u32(v);
    ++n_kv_;
  }
  void boolean(const std::string& key, bool v) {
    header(key, 7);
    uint8_t b = v;
    raw(&b, 1);
    ++n_kv_;
  }
  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> out;
    auto put = [&](const void* p, size_t n) {
      const auto* b = static_cast<const uint8_t*>(p);
      out.insert(out.end(), b, b + n);
    };
    uint32_t magic = 0x46554747, version = 3;
    uint64_t n_tensors = 0, n_kv = n_kv_;
    put(&magic, 4);
    put(&version, 4);
    put(&n_tensors, 8);
    put(&n_kv, 8);
    out.insert(out.end(), body_.begin(), body_.end());
    return out;
  }

 private:
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    body_.insert(body_.end(), b, b + n);
  }
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void str(const std::string& s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  void header(const std::string& key, uint32_t type) {
    str(key);
    u32(type);
  }
  std::vector<uint8_t> body_;
  uint64_t n_kv_ = 0;
};

}  // namespace slimkv::test
