// Test helpers for comparisons with llama.cpp's reference outputs (../shared/models/synthetic): the manifest rows,
// float32 logits files, and the statistics the README's pass criteria use (max |Δlogit| per position, mean KL,
// argmax agreement). Also runs slimkv-ref (../shared/bench-ref/llama.cpp) for references made at test time.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/mapped_file.h"
#include "model_helpers.h"

namespace slimkv::test {

inline std::string synthetic_dir() { return models_dir() + "/synthetic"; }

struct ManifestRow {
  nlohmann::json j;
  std::string file() const { return j["file"].get<std::string>(); }
  std::string family() const { return j["family"].get<std::string>(); }
  std::string ftype() const { return j["ftype"].get<std::string>(); }
  std::string path(const char* key) const { return synthetic_dir() + "/" + j[key].get<std::string>(); }
  const nlohmann::json& criteria() const { return j["criteria"]; }
  bool is_f32() const { return ftype() == "F32"; }
  // Tensor types slimkv cannot read yet (empty = all supported).
  std::vector<std::string> unsupported_types() const {
    std::set<std::string> ok;
    for (const DTypeInfo& i : kDTypeInfo) ok.insert(std::string(i.name));
    std::vector<std::string> out;
    for (auto& [t, n] : j["tensor_types"].items()) {
      if (!ok.count(t)) out.push_back(t);
    }
    return out;
  }
};

inline void PrintTo(const ManifestRow& r, std::ostream* os) { *os << r.file(); }

inline std::vector<ManifestRow> manifest_rows() {
  std::vector<ManifestRow> rows;
  std::ifstream in(synthetic_dir() + "/manifest.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) rows.push_back({nlohmann::json::parse(line)});
  }
  return rows;
}

inline std::vector<float> read_f32_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::vector<float> v(static_cast<size_t>(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

inline std::vector<int32_t> read_ids_file(const std::string& path) {
  std::vector<int32_t> ids;
  std::string s = read_text_file(path);
  for (char& c : s) {
    if (c == ',' || c == '[' || c == ']') c = ' ';
  }
  std::istringstream is(s);
  for (int64_t v; is >> v;) ids.push_back(static_cast<int32_t>(v));
  return ids;
}

struct LogitsDiff {
  std::vector<double> max_abs;  // [positions] max |Δlogit| over the vocabulary
  double mean_kl = 0;           // mean over positions of KL(p_ref || p_ours)
  double argmax_agree = 0;      // share of positions whose argmax agree
  double worst() const { return max_abs.empty() ? 0 : *std::max_element(max_abs.begin(), max_abs.end()); }
  double quantile(double q) const {
    std::vector<double> s = max_abs;
    std::sort(s.begin(), s.end());
    return s.empty() ? 0 : s[std::min(s.size() - 1, static_cast<size_t>(q * static_cast<double>(s.size())))];
  }
};

inline LogitsDiff compare_logits(const std::vector<float>& ours, const std::vector<float>& ref, int32_t vocab) {
  LogitsDiff d;
  EXPECT_EQ(ours.size(), ref.size());
  const size_t n = std::min(ours.size(), ref.size()) / vocab;
  int64_t agree = 0;
  for (size_t p = 0; p < n; ++p) {
    const float* a = ours.data() + p * vocab;
    const float* b = ref.data() + p * vocab;
    double mx = 0, ma = -1e300, mb = -1e300;
    int32_t aa = 0, ab = 0;
    for (int32_t i = 0; i < vocab; ++i) {
      mx = std::max(mx, static_cast<double>(std::fabs(a[i] - b[i])));
      if (a[i] > ma) ma = a[i], aa = i;
      if (b[i] > mb) mb = b[i], ab = i;
    }
    double sa = 0, sb = 0;
    for (int32_t i = 0; i < vocab; ++i) {
      sa += std::exp(a[i] - ma);
      sb += std::exp(b[i] - mb);
    }
    double kl = 0;
    for (int32_t i = 0; i < vocab; ++i) {
      const double lp = b[i] - mb - std::log(sb), lq = a[i] - ma - std::log(sa);
      kl += std::exp(lp) * (lp - lq);
    }
    d.max_abs.push_back(mx);
    d.mean_kl += kl / static_cast<double>(n);
    agree += aa == ab;
  }
  d.argmax_agree = n ? static_cast<double>(agree) / static_cast<double>(n) : 0;
  return d;
}

// Logits of every position of ids, the prompt evaluated in chunks of `chunk` tokens (0 = one batch).
inline std::vector<float> all_logits(const Model& m, const std::vector<int32_t>& ids, int32_t chunk,
                                     ThreadPool* pool = nullptr, int32_t block_size = 16,
                                     MlaAttention mla = MlaAttention::Absorbed) {
  const int32_t n = static_cast<int32_t>(ids.size()), c = chunk > 0 ? chunk : n;
  SequenceForward fwd(m, pool, n, block_size, c);
  fwd.forward_pass().block_options().mla_attention = mla;
  std::vector<float> out(static_cast<size_t>(n) * m.config.vocab_size);
  for (int32_t p = 0; p < n; p += c) {
    const int32_t len = std::min(c, n - p);
    fwd.forward(std::span<const int32_t>(ids).subspan(p, len), p, true,
                out.data() + static_cast<size_t>(p) * m.config.vocab_size);
  }
  return out;
}

// True when the CPU reports AMX, where the reference build would load its `sapphirerapids` variant.
inline bool cpu_has_amx() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("flags", 0) == 0) return line.find(" amx_int8") != std::string::npos;
  }
  return false;
}

// The reference build's directory without its AMX variant: that variant's extra buffer type aborts llama.cpp on
// some of our files (GGML_ASSERT(*cur_backend_id != -1) in ggml_backend_sched) and dies with SIGILL in
// ggml_backend_amx_mul_mat on Intel Xeon VMs (llama.cpp PR #26954); the next best variant gives the reference.
// Copied once per machine (an executable finds its modules beside its real path), atomically by rename.
inline std::string reference_dir_without_amx(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path copy = fs::temp_directory_path() / "slimkv-llamacpp-no-amx";
  if (fs::exists(copy / "slimkv-ref")) return copy.string();
  const fs::path tmp = copy.string() + "." + std::to_string(::getpid());
  fs::create_directories(tmp);
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename() != "libggml-cpu-sapphirerapids.so") {
      fs::copy_file(e.path(), tmp / e.path().filename(), fs::copy_options::overwrite_existing);
    }
  }
  std::error_code ec;
  fs::rename(tmp, copy, ec);  // another test process may have won the race: then use its copy
  if (ec) fs::remove_all(tmp);
  return copy.string();
}

// The llama.cpp reference tool, when this CPU runs it (else empty: callers skip).
inline std::string slimkv_ref_binary() {
  const std::string dir = shared_dir() + "/bench-ref/llama.cpp";
  if (!exists(dir + "/slimkv-ref") || !exists(dir + "/check-cpu")) {
    if (in_ci()) ADD_FAILURE() << "missing " << dir << "/slimkv-ref (CI is set: inputs must be present)";
    return "";
  }
  if (std::system((dir + "/check-cpu >/dev/null 2>&1").c_str()) != 0) return "";
  return (cpu_has_amx() ? reference_dir_without_amx(dir) : dir) + "/slimkv-ref";
}

}  // namespace slimkv::test
