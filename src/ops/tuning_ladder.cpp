#include "ops/tuning_ladder.h"

#include <algorithm>

#include <fmt/format.h>

namespace slimkv {

double quality_drop(const QualityResult& r) { return std::max({0.0, 1.0 - r.top1_agreement, r.ppl_change}); }

TuneResult run_tuning_ladder(QualityEvaluator& ev, const ModelConfig& m, const TuneOptions& opt,
                             const std::function<void(const TuneStep&)>& on_step) {
  TuneResult out;
  CompressionConfig off;
  off.enabled = false;
  out.steps.push_back({"1 baseline", "compression off (full f32 cache)", off, ev.baseline(), 0.0, true});
  if (on_step) on_step(out.steps.back());
  CompressionConfig current;  // the accepted configuration so far (plain f32 cache, compression on)
  auto measure = [&](const std::string& stage, const std::string& what, const CompressionConfig& cc) {
    TuneStep s{stage, what, cc, ev.evaluate(what, cc), 0.0, false};
    s.drop = quality_drop(s.quality);
    s.accepted = s.drop <= opt.max_quality_drop;
    out.steps.push_back(s);
    if (on_step) on_step(out.steps.back());
    return s.accepted;
  };
  auto choose = [&] {
    for (int32_t i = 0; i < static_cast<int32_t>(out.steps.size()); ++i) {
      const auto& s = out.steps[i];
      if (s.accepted && s.quality.kv_bytes_per_token < out.steps[out.chosen].quality.kv_bytes_per_token) out.chosen = i;
    }
  };
  if (m.dsv4.enabled()) {  // a natively compressed model: the cache dtype, then the indexer's top-k
    if (opt.quantize) {
      for (const char* d : {"f16", "int8", "int4"}) {
        CompressionConfig cc = current;
        cc.kv_cache_dtype = d;
        if (!measure("2 cache dtype", fmt::format("entries and window in {}", d), cc)) break;
        current = cc;
      }
    }
    for (int32_t k = m.dsv4.index_topk / 2; k >= 1 && k >= m.dsv4.index_topk / 8; k /= 2) {
      CompressionConfig cc = current;
      cc.kv_sparse_topk = k;
      if (!measure("3 indexer top-k", fmt::format("+ indexer top-{} (model: {})", k, m.dsv4.index_topk), cc)) break;
      current = cc;
    }
    choose();
    return out;
  }
  // 2. Low rank only, from head_dim / 2 upward while quality drops too much.
  int32_t rank = 0;
  if (!opt.calibration.empty()) {
    for (int32_t r : {m.head_dim / 2, m.head_dim * 3 / 4}) {
      if (r < 1 || r >= m.head_dim) continue;
      CompressionConfig cc = current;
      cc.kv_calibration = opt.calibration;
      cc.kv_compression_rank = r;
      if (measure("2 low rank", fmt::format("low rank {} of {}", r, m.head_dim), cc)) {
        rank = r;
        current = cc;
        break;
      }
    }
  }
  // 3. Sparse retention (dynamic top-K, 4 sinks, window K/2, merged evictions), tighter until the knee.
  std::vector<int32_t> ks;
  for (int32_t k : opt.topk) if (k < ev.ctx()) ks.push_back(k);
  if (ks.empty()) ks = {ev.ctx() / 2, ev.ctx() / 4, ev.ctx() / 8};
  for (int32_t k : ks) {
    if (k < 16) break;
    CompressionConfig cc = current;
    cc.kv_sparse_mode = "dynamic";
    cc.kv_sparse_topk = k;
    cc.kv_recent_window = k / 2;
    cc.kv_evict_policy = "merge";
    if (!measure("3 sparse", fmt::format("+ dynamic top-{} (4 sinks, window {}, merge)", k, k / 2), cc)) break;
    current = cc;
  }
  // 4. Deeper layers compressed harder: the shallow half keeps the low rank, the deep half halves it.
  if (rank > 0 && rank % 2 == 0 && m.head_dim % rank == 0 && m.head_dim % (rank / 2) == 0) {
    CompressionConfig cc = current;
    cc.kv_compression_rank = 0;
    cc.kv_layer_compress_ratio.assign(m.num_layers, m.head_dim / rank);
    for (int32_t l = m.num_layers / 2; l < m.num_layers; ++l) cc.kv_layer_compress_ratio[l] = m.head_dim / (rank / 2);
    if (measure("4 deep layers", fmt::format("+ deep half at rank {}", rank / 2), cc)) current = cc;
  }
  // 5. Quantization on top.
  if (opt.quantize) {
    for (const char* d : {"int8", "int4"}) {
      CompressionConfig cc = current;
      cc.kv_cache_dtype = d;
      if (!measure("5 quantize", fmt::format("+ {} (Hadamard rotation)", d), cc)) break;
      current = cc;
    }
  }
  choose();
  return out;
}

std::string tuning_report_markdown(const TuneResult& r, const TuneOptions& opt) {
  std::string s = fmt::format(
      "# slimkv tune\n\nQuality limit: drop = max(1 − top-1 agreement, perplexity change) ≤ {:.2f}%.\n\n"
      "| step | configuration | KV bytes/token | vs f16 | top-1 agree | mean KL | ppl change | drop | passkey | tokens/s | kept |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n",
      100 * opt.max_quality_drop);
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const auto& t = r.steps[i];
    const std::string pk = t.quality.passkey_total
                               ? fmt::format("{}/{}", t.quality.passkey_right, t.quality.passkey_total)
                               : "-";
    s += fmt::format("| {} | {}{} | {} | {:.1f}% | {:.2f}% | {:.5f} | {:+.2f}% | {:.2f}% | {} | {:.0f} | {} |\n",
                     t.stage, t.description, static_cast<int32_t>(i) == r.chosen ? " **(chosen)**" : "",
                     t.quality.kv_bytes_per_token, 100 * t.quality.ratio_vs_f16, 100 * t.quality.top1_agreement,
                     t.quality.mean_kl, 100 * t.quality.ppl_change, 100 * t.drop, pk, t.quality.tokens_per_s,
                     t.accepted ? "yes" : "no (over the limit)");
  }
  const auto& c = r.steps[r.chosen];
  s += fmt::format("\nChosen: {} — {:.1f}% of an f16 cache ({:.2f}x smaller), top-1 agreement {:.2f}%, "
                   "perplexity {:+.2f}%.\n",
                   c.description, 100 * c.quality.ratio_vs_f16, 1.0 / c.quality.ratio_vs_f16,
                   100 * c.quality.top1_agreement, 100 * c.quality.ppl_change);
  return s;
}

}  // namespace slimkv
