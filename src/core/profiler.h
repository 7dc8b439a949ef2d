// Wall-time accounting per kernel family for `slimkv profile`, split by step phase (prefill / decode). Off unless
// a Profiler is installed: a ProfScope then costs one pointer test. Single-threaded use (the engine's thread; the
// scopes sit around parallel regions, not inside them). Must not know: what the kernels do.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>

namespace slimkv {

enum class ProfKind : int {
  Matmul,           // weight GEMMs (q/k/v/o, MLP, logits)
  Attention,        // paged attention: scores, softmax, values (dequantization and importance fused inside)
  KvWrite,          // RoPE + writing K/V (low-rank projection, rotation, quantization)
  SparseScoring,    // routing attention mass to per-block importance
  SparseSelection,  // choosing and evicting the least-attended blocks (+ merging them into summaries)
  Indexer,          // DeepSeek-V4's lightning indexer: its queries, scores over the compressed keys, top-k; and
                    // select mode's choice of rows (scoring its index, the top rows; kv_sparse_mode select)
  Compressor,       // DeepSeek-V4's compressors: gated pooling of token groups into entries (+ indexer keys)
  Collective,       // tensor / expert parallelism: all-reduces between ranks (waiting for the slowest included)
  Sampling,
  Scheduling,
  SpecPropose,      // speculative decoding: proposing drafts (n-gram lookup)
  SpecVerify,       // speculative decoding: verifying a verify chunk's rows into accepted drafts (its forward is
                    // counted under matmul, attention, ... like any step's)
  Other,            // norms, SwiGLU, residuals, embedding, bookkeeping
  kCount
};
const char* prof_kind_name(ProfKind k);

struct ProfileTimes {
  std::array<double, static_cast<int>(ProfKind::kCount)> seconds{};
  double total_s = 0;  // wall time of the steps (Other = total − the rest)
  int64_t steps = 0, tokens = 0;
};

class Profiler {
 public:
  static Profiler* active() { return active_; }
  static void install(Profiler* p) { active_ = p; }  // nullptr: off
  void set_decode(bool decode) { current_ = decode ? &decode_ : &prefill_; }
  void add(ProfKind k, double s) { current_->seconds[static_cast<int>(k)] += s; }
  double current_seconds(ProfKind k) const { return current_->seconds[static_cast<int>(k)]; }
  void add_step(double s, int64_t tokens) {
    current_->total_s += s;
    ++current_->steps;
    current_->tokens += tokens;
  }
  const ProfileTimes& prefill() const { return prefill_; }
  const ProfileTimes& decode() const { return decode_; }

 private:
  static inline Profiler* active_ = nullptr;
  ProfileTimes prefill_, decode_;
  ProfileTimes* current_ = &prefill_;
};

class ProfScope {
 public:
  explicit ProfScope(ProfKind k) : p_(Profiler::active()), k_(k) {
    if (p_) t0_ = std::chrono::steady_clock::now();
  }
  // Inside an open scope of `outer`: the time counts as k, not also as outer.
  ProfScope(ProfKind k, ProfKind outer) : ProfScope(k) { outer_ = outer; }
  ~ProfScope() {
    if (!p_) return;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    p_->add(k_, s);
    if (outer_ != ProfKind::kCount) p_->add(outer_, -s);
  }
  ProfScope(const ProfScope&) = delete;
  ProfScope& operator=(const ProfScope&) = delete;

 private:
  Profiler* p_;
  ProfKind k_;
  ProfKind outer_ = ProfKind::kCount;  // kCount: none
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace slimkv
