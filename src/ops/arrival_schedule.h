// A load-test workload that looks like production (seed 4.4): request arrival times (Poisson, or gamma with a
// burstiness factor as vLLM's benchmark does, plus an optional burst), prompts of mixed lengths from a dataset or
// synthetic words, shared-prefix groups, and fixed output lengths. Pure and seeded. Must not know: HTTP.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace slimkv {

struct WorkloadConfig {
  int32_t num_prompts = 0;          // --num-prompts (0: as many as --duration allows)
  double duration_s = 0;            // --duration
  double request_rate = 0;          // --request-rate requests/s (0 or inf: all at once)
  double burstiness = 1.0;          // --burstiness: gamma shape (1 = Poisson; < 1 burstier)
  double burst_at_s = -1, burst_rate = 0, burst_duration_s = 2;  // --burst-at T --burst-rate R (for 2 s)
  int32_t input_len_min = 16, input_len_max = 256;                  // words per prompt (uniform)
  int32_t output_len = 64;          // --output-len (sent as max_tokens with ignore_eos)
  int32_t prefix_groups = 0, prefix_len = 0;  // --prefix-groups G --prefix-len P (words shared within a group)
  std::string dataset;              // --dataset: a text file (cut into passages) or JSONL ({"prompt"|"text": ...})
  uint64_t seed = 0;
  void validate() const;
};

struct PlannedRequest {
  double at_s = 0;                  // send time from the start of the run
  std::string prompt;
  int32_t max_tokens = 0;
  int32_t prefix_group = -1;
};

// Throws Error on a bad configuration or an unreadable / empty dataset.
std::vector<PlannedRequest> make_workload(const WorkloadConfig& cfg);

}  // namespace slimkv
