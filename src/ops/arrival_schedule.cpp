#include "ops/arrival_schedule.h"

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace slimkv {
namespace {

std::vector<std::string> read_words(const std::string& text) {
  std::vector<std::string> w;
  std::istringstream in(text);
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

std::vector<std::string> dataset_prompts(const std::string& path) {  // JSONL prompts, or none for plain text
  std::ifstream in(path);
  SLIMKV_CHECK(in.good(), "--dataset {}: cannot read it", path);
  std::vector<std::string> out;
  std::string line;
  bool jsonl = path.size() > 6 && path.substr(path.size() - 6) == ".jsonl";
  if (!jsonl) return out;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    SLIMKV_CHECK(j.is_object(), "--dataset {}: line {} is not a JSON object", path, n);
    const char* key = j.contains("prompt") ? "prompt" : j.contains("text") ? "text" : nullptr;
    SLIMKV_CHECK(key && j[key].is_string(), "--dataset {}: line {} has no string \"prompt\" or \"text\"", path, n);
    out.push_back(j[key].get<std::string>());
  }
  SLIMKV_CHECK(!out.empty(), "--dataset {}: no prompts in it", path);
  return out;
}

std::string join(const std::vector<std::string>& w, size_t from, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += (i ? " " : "") + w[(from + i) % w.size()];
  return s;
}

}  // namespace

void WorkloadConfig::validate() const {
  SLIMKV_CHECK(num_prompts >= 0 && num_prompts <= 10'000'000, "--num-prompts must be in 0..1e7 (got {})", num_prompts);
  SLIMKV_CHECK(duration_s >= 0 && duration_s <= 86400, "--duration must be in 0..86400 s (got {})", duration_s);
  SLIMKV_CHECK(num_prompts > 0 || duration_s > 0, "give --num-prompts or --duration");
  SLIMKV_CHECK(num_prompts > 0 || request_rate > 0, "--duration needs a finite --request-rate");
  SLIMKV_CHECK(request_rate >= 0, "--request-rate must be >= 0 (got {})", request_rate);
  SLIMKV_CHECK(burstiness > 0, "--burstiness must be > 0 (got {})", burstiness);
  SLIMKV_CHECK(burst_rate >= 0 && burst_duration_s > 0, "--burst-rate must be >= 0");
  SLIMKV_CHECK(input_len_min >= 1 && input_len_max >= input_len_min, "--input-len-min/max: need 1 <= min <= max");
  SLIMKV_CHECK(output_len >= 1, "--output-len must be >= 1 (got {})", output_len);
  SLIMKV_CHECK(prefix_groups >= 0 && prefix_len >= 0, "--prefix-groups and --prefix-len must be >= 0");
  SLIMKV_CHECK(prefix_groups == 0 || prefix_len > 0, "--prefix-groups needs --prefix-len > 0");
}

std::vector<PlannedRequest> make_workload(const WorkloadConfig& c) {
  c.validate();
  std::mt19937_64 rng(c.seed);
  std::vector<std::string> prompts, words;
  if (!c.dataset.empty()) {
    prompts = dataset_prompts(c.dataset);
    if (prompts.empty()) {
      std::ifstream in(c.dataset);
      std::stringstream ss;
      ss << in.rdbuf();
      words = read_words(ss.str());
      SLIMKV_CHECK(words.size() >= 16, "--dataset {}: too little text ({} words)", c.dataset, words.size());
    }
  } else {
    const char* vocab[] = {"the", "little", "dog", "ran", "to", "a", "big", "tree", "and", "saw", "cat", "happy",
                           "sun", "played", "with", "her", "friend", "in", "park", "one", "day", "was", "very", "red"};
    for (int i = 0; i < 4096; ++i) words.push_back(vocab[rng() % (sizeof(vocab) / sizeof(*vocab))]);
  }
  std::vector<std::string> prefixes;
  for (int32_t g = 0; g < c.prefix_groups; ++g) {
    prefixes.push_back(words.empty() ? prompts[rng() % prompts.size()].substr(0, c.prefix_len * 6)
                                     : join(words, rng() % words.size(), c.prefix_len));
  }
  std::uniform_int_distribution<int32_t> len(c.input_len_min, c.input_len_max);
  std::vector<PlannedRequest> out;
  double t = 0;
  for (int64_t i = 0;; ++i) {
    if (c.num_prompts > 0 && i >= c.num_prompts) break;
    double rate = c.request_rate;
    if (c.burst_at_s >= 0 && t >= c.burst_at_s && t < c.burst_at_s + c.burst_duration_s) rate += c.burst_rate;
    if (i > 0 && rate > 0 && std::isfinite(rate)) {  // gamma inter-arrival with mean 1/rate (shape = burstiness)
      std::gamma_distribution<double> gap(c.burstiness, 1.0 / (rate * c.burstiness));
      t += gap(rng);
    }
    if (c.duration_s > 0 && t >= c.duration_s) break;
    PlannedRequest r;
    r.at_s = t;
    r.max_tokens = c.output_len;
    std::string body = words.empty() ? prompts[rng() % prompts.size()] : join(words, rng() % words.size(), len(rng));
    if (!prefixes.empty()) {
      r.prefix_group = static_cast<int32_t>(i % c.prefix_groups);
      body = prefixes[r.prefix_group] + " " + body;
    }
    r.prompt = std::move(body);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace slimkv
