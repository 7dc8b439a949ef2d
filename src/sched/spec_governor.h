// When speculative decoding pays (issue SD): drafts cost a verify row each, and whether that beats plain decoding
// depends on the machine, the model and the text (a model whose weights sit in cache pays per row; one bound by
// reading its weights pays little). So the engine measures: it alternates a window of decode steps with drafts and
// one without, compares their tokens per second, and keeps the faster for a longer stretch before measuring again.
// Each time plain decoding wins again the stretch doubles (up to 16x): a probe with drafts that lose costs its steps'
// slowdown, so it is paid ever more rarely while they keep losing; a win resets the stretch.
// Pure: the caller reports each decode step's tokens and time. Must not know: requests or the model.
#pragma once
#include <algorithm>
#include <cstdint>

namespace slimkv {

class SpecGovernor {
 public:
  SpecGovernor(int32_t probe_steps = 64, int32_t keep_steps = 1024) : probe_(probe_steps), keep_(keep_steps) {}
  bool speculate_now() const { return phase_ == Phase::ProbeSpec || (phase_ == Phase::Keep && keep_spec_); }
  // One decode step (every chunk a decode or a verify chunk): the tokens it gave and its time.
  void record(int64_t tokens, double step_ms) {
    const int i = phase_ == Phase::ProbePlain ? 1 : 0;
    if (phase_ != Phase::Keep) {
      tokens_[i] += static_cast<double>(tokens);
      ms_[i] += step_ms;
    }
    if (++steps_ < (phase_ == Phase::Keep ? keep_ * keep_scale_ : probe_)) return;
    steps_ = 0;
    if (phase_ == Phase::ProbeSpec) {
      phase_ = Phase::ProbePlain;
    } else if (phase_ == Phase::ProbePlain) {
      const bool was_plain = !keep_spec_ && kept_once_;
      keep_spec_ = rate(0) > 1.05 * rate(1);  // tokens per ms with drafts against without (by a margin: noise)
      keep_scale_ = keep_spec_ ? 1 : (was_plain ? std::min(keep_scale_ * 2, 16) : 1);
      kept_once_ = true;
      phase_ = Phase::Keep;
    } else {
      phase_ = Phase::ProbeSpec;
      tokens_[0] = tokens_[1] = ms_[0] = ms_[1] = 0;
    }
  }
  bool keeping_spec() const { return keep_spec_; }
  int32_t keep_steps() const { return keep_ * keep_scale_; }  // the current (or next) stretch

 private:
  enum class Phase { ProbeSpec, ProbePlain, Keep };
  double rate(int i) const { return ms_[i] > 0 ? tokens_[i] / ms_[i] : 0.0; }
  int32_t probe_, keep_;
  Phase phase_ = Phase::ProbeSpec;
  int32_t steps_ = 0;
  bool keep_spec_ = true;
  bool kept_once_ = false;  // a stretch was decided before
  int32_t keep_scale_ = 1;  // doubles while plain decoding keeps winning
  double tokens_[2] = {0, 0}, ms_[2] = {0, 0};  // [with drafts, without]
};

}  // namespace slimkv
