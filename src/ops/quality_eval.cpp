#include "ops/quality_eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model/kv_streams.h"
#include "model/kv_projection.h"
#include "runner/sequence_forward.h"
#include "runner/teacher_forced.h"

namespace slimkv {
namespace {

void log_softmax(const float* row, int32_t n, std::vector<double>& out) {  // out[i] = log p_i
  out.resize(n);
  double mx = row[0];
  for (int32_t i = 1; i < n; ++i) mx = std::max<double>(mx, row[i]);
  double sum = 0;
  for (int32_t i = 0; i < n; ++i) sum += std::exp(row[i] - mx);
  const double lse = mx + std::log(sum);
  for (int32_t i = 0; i < n; ++i) out[i] = row[i] - lse;
}

// What was read between two snapshots of a run's cumulative reads.
PagedAttention::ReadStats delta(const PagedAttention::ReadStats& now, const PagedAttention::ReadStats& before) {
  PagedAttention::ReadStats d;
  d.items = now.items - before.items;
  d.read_fraction_sum = now.read_fraction_sum - before.read_fraction_sum;
  d.rows_read = now.rows_read - before.rows_read;
  d.rows_visible = now.rows_visible - before.rows_visible;
  d.index_rows = now.index_rows - before.index_rows;
  d.bytes_read = now.bytes_read - before.bytes_read;
  d.f16_bytes = now.f16_bytes - before.f16_bytes;
  return d;
}

std::string first_digits(const std::string& s) {
  size_t a = s.find_first_of("0123456789");
  if (a == std::string::npos) return "";
  size_t b = s.find_first_not_of("0123456789", a);
  return s.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

}  // namespace

QualityEvaluator::QualityEvaluator(const Model& model, ThreadPool* pool, std::vector<int32_t> ids, int32_t ctx,
                                   std::string passkey, int32_t max_passkey, int32_t block_size,
                                   int32_t prefill_chunk, int32_t score_from)
    : model_(model), pool_(pool), ctx_(ctx), passkey_(std::move(passkey)), max_passkey_(max_passkey),
      block_size_(block_size), prefill_chunk_(prefill_chunk), score_from_(score_from) {
  SLIMKV_CHECK(ids.size() >= 2, "too little text to evaluate ({} tokens)", ids.size());
  windows_ = split_windows(ids, ctx_, model.tokenizer->bos_id());  // as `perplexity`
  CompressionConfig off;
  off.enabled = false;
  baseline_ = run("baseline (full f32 cache)", off, true);
}

QualityResult QualityEvaluator::evaluate(const std::string& name, const CompressionConfig& cc) {
  cc.validate(kv_layer_specs(model_.config));
  return run(name, cc, false);
}

QualityResult QualityEvaluator::run(const std::string& name, const CompressionConfig& cc, bool is_baseline) {
  const ModelConfig& c = model_.config;
  const int32_t V = c.vocab_size;
  QualityResult r;
  r.name = name;
  const KvLayout layout = model_kv_layout(model_, block_size_, cc);
  int64_t held = 0, f16 = 0;  // bytes a full window holds, summed over layers, and an f16 cache's per token
  for (const KvLayerGeometry& g : layout.layers) {
    const KvGroupSpec& s = g.spec;
    const int64_t kept = s.dynamic()           ? std::min<int64_t>(ctx_, s.dyn_topk_tokens + (s.dyn_merge ? block_size_ : 0))
                         : s.windowed()        ? std::min<int64_t>(ctx_, s.sink_tokens + s.window_tokens)
                                               : ctx_;
    held += g.bytes_per_token() * kept;
    if (!g.appended()) f16 += 2LL * g.num_kv_heads * (g.head_dim_k + g.head_dim_v);
  }
  r.kv_bytes_per_token = held / ctx_;
  r.ratio_vs_f16 = static_cast<double>(r.kv_bytes_per_token) / static_cast<double>(f16);
  std::vector<float> logits(static_cast<size_t>(ctx_) * V);  // [ctx, vocab]
  std::vector<double> lp_b, lp_c, kl;
  double nll = 0;
  int64_t top1_same = 0, tokens = 0;
  PagedAttention::ReadStats reads;  // over the scored positions
  const auto t0 = std::chrono::steady_clock::now();
  if (is_baseline) base_logits_.resize(windows_.size());
  for (size_t w = 0; w < windows_.size(); ++w) {
    const auto& win = windows_[w];
    TeacherForcedRun run(model_, pool_, cc, ctx_, block_size_);
    if (prefill_chunk_ > 0) {  // as serving prefills it (its reads: the whole window's)
      run.prefill(win, prefill_chunk_, true, logits.data());
      reads.add(run.read_stats());
    } else {
      for (size_t t = 0; t < win.size(); ++t) {
        const PagedAttention::ReadStats before = run.read_stats();
        run.step(win[t], logits.data() + t * V);
        if (static_cast<int64_t>(t) >= score_from_) reads.add(delta(run.read_stats(), before));
      }
    }
    tokens += static_cast<int64_t>(win.size());
    if (is_baseline) base_logits_[w].assign(logits.begin(), logits.begin() + win.size() * V);
    for (size_t t = static_cast<size_t>(std::max(score_from_, 0)); t + 1 < win.size(); ++t) {
      const float* rc = logits.data() + t * V;
      const float* rb = base_logits_[w].data() + t * V;
      log_softmax(rc, V, lp_c);
      log_softmax(rb, V, lp_b);
      double k = 0;
      for (int32_t i = 0; i < V; ++i) k += std::exp(lp_b[i]) * (lp_b[i] - lp_c[i]);
      kl.push_back(std::max(0.0, k));
      top1_same += (std::max_element(rc, rc + V) - rc) == (std::max_element(rb, rb + V) - rb);
      nll -= lp_c[win[t + 1]];
      ++r.predictions;
    }
  }
  r.tokens_per_s = tokens / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.read_fraction = reads.items ? reads.read_fraction_sum / static_cast<double>(reads.items) : 1.0;
  r.read_bytes_vs_f16 = reads.f16_bytes > 0 ? reads.bytes_read / reads.f16_bytes : 0.0;
  std::sort(kl.begin(), kl.end());
  for (double x : kl) r.mean_kl += x;
  r.mean_kl /= std::max<size_t>(1, kl.size());
  r.p99_kl = kl.empty() ? 0 : kl[std::min(kl.size() - 1, static_cast<size_t>(0.99 * kl.size()))];
  r.top1_agreement = static_cast<double>(top1_same) / std::max<int64_t>(1, r.predictions);
  r.perplexity = std::exp(nll / std::max<int64_t>(1, r.predictions));
  r.ppl_change = is_baseline ? 0.0 : r.perplexity / baseline_.perplexity - 1;
  if (!passkey_.empty()) run_passkey(cc, r);
  return r;
}

// Greedy answers to the JSONL's prompts (prompt, answer; optional kind, context_tokens group the counts).
void QualityEvaluator::run_passkey(const CompressionConfig& cc, QualityResult& r) {
  PagedAttention::ReadStats answer_reads;  // over the answers' decode steps
  std::ifstream in(passkey_);
  SLIMKV_CHECK(in.good(), "cannot open passkey file '{}'", passkey_);
  std::string line;
  while (std::getline(in, line) && r.passkey_total < max_passkey_) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("prompt") || !j.contains("answer")) continue;
    PasskeyCase pc;
    pc.prompt_ids = model_.tokenizer->encode(j["prompt"].get<std::string>(), true);
    if (static_cast<int32_t>(pc.prompt_ids.size()) + 8 > model_.config.max_seq_len) continue;
    // Serving's schedule: the prompt in prefill chunks (retention after the prompt, or between chunks where the
    // config evicts in prefill), then 8 greedy tokens one at a time.
    const int32_t prompt_n = static_cast<int32_t>(pc.prompt_ids.size());
    TeacherForcedRun run(model_, pool_, cc, prompt_n + 8, block_size_);
    std::vector<float> logits(static_cast<size_t>(model_.config.vocab_size));
    run.prefill(pc.prompt_ids, prefill_chunk_ > 0 ? prefill_chunk_ : kPasskeyChunk, false, logits.data());
    for (int k = 0; k < 8; ++k) {
      const int32_t id = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      pc.out_ids.push_back(id);
      if (k + 1 == 8) break;
      const PagedAttention::ReadStats before = run.read_stats();
      run.step(id, logits.data());
      answer_reads.add(delta(run.read_stats(), before));
    }
    std::vector<int32_t> all = pc.prompt_ids;
    all.insert(all.end(), pc.out_ids.begin(), pc.out_ids.end());
    const std::string text = model_.tokenizer->decode(all).substr(model_.tokenizer->decode(pc.prompt_ids).size());
    pc.answer = j["answer"].get<std::string>();
    pc.got = first_digits(text);
    pc.group = j.value("kind", std::string("passkey"));
    if (j.contains("context_tokens")) pc.group += "@" + std::to_string(j["context_tokens"].get<int64_t>());
    r.passkey_right += pc.got == pc.answer;
    ++r.passkey_total;
    r.passkey_cases.push_back(std::move(pc));
  }
  if (answer_reads.items > 0) r.passkey_read_fraction = answer_reads.read_fraction_sum / answer_reads.items;
}

}  // namespace slimkv
