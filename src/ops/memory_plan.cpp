#include "ops/memory_plan.h"

#include <algorithm>

#include "core/check.h"
#include "ops/native_kv_plan.h"
#include <limits>

namespace slimkv {
namespace {

int64_t weight_bits_x32(const std::string& d) {  // bits per weight × 32 (Q8_0: 34 bytes per 32 weights)
  if (d == "f32") return 32 * 32;
  if (d == "f16" || d == "bf16") return 16 * 32;
  if (d == "q8_0") return 34 * 8;
  if (d == "q4_0") return 18 * 8;
  fail("--weights-dtype {}: expected f32, f16, bf16, q8_0 or q4_0", d);
}

int64_t mul(int64_t a, int64_t b) {
  int64_t r;
  SLIMKV_CHECK(!__builtin_mul_overflow(a, b, &r), "memory plan: {} x {} bytes does not fit in 64 bits", a, b);
  return r;
}
int64_t add(int64_t a, int64_t b) {
  int64_t r;
  SLIMKV_CHECK(!__builtin_add_overflow(a, b, &r), "memory plan: {} + {} bytes does not fit in 64 bits", a, b);
  return r;
}

// Tokens a sequence of ctx tokens holds in a layer whose block table has this spec (the retention rules of
// KvCacheManager, rounded up by one partial block).
int64_t held_tokens(const KvGroupSpec& g, int64_t ctx, int64_t block) {
  if (g.dynamic()) return std::min(ctx, static_cast<int64_t>(g.dyn_topk_tokens) + (g.dyn_merge ? block : 0));
  if (g.windowed()) return std::min(ctx, static_cast<int64_t>(g.sink_tokens) + g.window_tokens + block);
  return ctx;
}

MemoryBreakdown breakdown(const PlanInput& in, const KvLayout& layout) {
  const ModelShape& s = in.shape;
  MemoryBreakdown b;
  for (const auto& g : layout.layers) {
    b.kv_bytes_per_token_layer.push_back(g.bytes_per_token());
    b.kv_tokens_per_layer.push_back(held_tokens(g.spec, in.context_tokens, layout.block_size_tokens));
    b.kv_bytes_per_token = add(b.kv_bytes_per_token, g.bytes_per_token());
    b.kv_bytes_per_seq = add(b.kv_bytes_per_seq, mul(g.bytes_per_token(), b.kv_tokens_per_layer.back()));
    b.kv_tokens_per_seq = std::max(b.kv_tokens_per_seq, b.kv_tokens_per_layer.back());
  }
  b.kv_bytes = mul(b.kv_bytes_per_seq, in.batch);
  const int64_t params = s.num_params > 0 ? s.num_params : s.estimated_params();
  b.weights_bytes = mul(params, weight_bits_x32(s.weights_dtype)) / (8 * 32);
  // One step of T tokens: ~6 hidden-sized and 3 ffn-sized f32 rows per token, plus the batch's logits.
  const int64_t t = std::min(in.max_batched_tokens, mul(in.context_tokens, in.batch));
  b.activation_bytes = add(mul(mul(t, add(mul(6, s.hidden()), mul(3, s.ffn()))), 4),
                           mul(mul(std::min<int64_t>(in.batch, t), s.vocab_size), 4));
  b.total_bytes = add(add(b.kv_bytes, b.weights_bytes), b.activation_bytes);
  return b;
}

// Largest x in [0, hi] with fixed + x × per_x ≤ budget (per_x may depend on x through `cost`).
template <typename F>
int64_t largest_fit(int64_t hi, int64_t budget, F cost) {
  if (cost(0) > budget) return 0;
  int64_t lo = 0;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (cost(mid) <= budget) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

}  // namespace

int64_t kv_dtype_bytes_x2(const std::string& d) {
  if (d == "f32") return 8;
  if (d == "f16" || d == "bf16") return 4;
  if (d == "int8" || d == "fp8") return 2;
  if (d == "int4") return 1;
  fail("KV dtype {}: expected f32, f16, bf16, int8 or int4", d);
}

void ModelShape::validate() const {
  SLIMKV_CHECK(num_layers >= 1 && num_layers <= 100000, "--layers must be in 1..100000 (got {})", num_layers);
  SLIMKV_CHECK(num_heads >= 1 && num_heads <= 100000, "--heads must be in 1..100000 (got {})", num_heads);
  SLIMKV_CHECK(num_kv_heads >= 1 && num_kv_heads <= num_heads && num_heads % num_kv_heads == 0,
               "--kv-heads must divide --heads {} (got {})", num_heads, num_kv_heads);
  SLIMKV_CHECK(head_dim >= 1 && head_dim <= 65536, "--head-dim must be in 1..65536 (got {})", head_dim);
  SLIMKV_CHECK(hidden_dim >= 0 && ffn_dim >= 0 && vocab_size >= 0 && num_params >= 0,
               "--hidden, --ffn, --vocab and --params must be >= 0");
  weight_bits_x32(weights_dtype);
}

std::vector<KvLayerSpec> ModelShape::layer_specs() const {
  if (!kv_layers.empty()) return kv_layers;
  return std::vector<KvLayerSpec>(num_layers, KvLayerSpec{static_cast<int32_t>(num_kv_heads),
                                                          static_cast<int32_t>(head_dim),
                                                          static_cast<int32_t>(head_dim), 0});
}

int64_t ModelShape::estimated_params() const {
  const int64_t h = hidden(), f = ffn();
  const int64_t attn = add(mul(mul(2, h), num_heads * head_dim), mul(mul(2, h), num_kv_heads * head_dim));
  const int64_t mlp = mul(mul(3, h), f);
  return add(mul(mul(2, vocab_size), h), mul(num_layers, add(add(attn, mlp), 2 * h)));
}

namespace {

// An MLA shape: heads, qk/v head dims (decompressed), kv_lora + rope per token and layer, total parameters.
ModelShape mla_shape(int64_t layers, int64_t heads, int64_t hidden, int64_t ffn, int64_t vocab, int64_t kv_lora,
                     int64_t rope, int64_t qk_head, int64_t v_head, double params) {
  ModelShape s;
  s.num_layers = layers;
  s.num_heads = heads;
  s.num_kv_heads = 1;
  s.head_dim = kv_lora + rope;
  s.hidden_dim = hidden;
  s.ffn_dim = ffn;
  s.vocab_size = vocab;
  s.num_params = static_cast<int64_t>(params);
  s.weights_dtype = "bf16";
  s.mla_qk_head_dim = qk_head;
  s.mla_v_head_dim = v_head;
  s.kv_layers.assign(layers, KvLayerSpec{1, static_cast<int32_t>(kv_lora + rope), static_cast<int32_t>(kv_lora), 0,
                                         true});
  return s;
}

}  // namespace

std::vector<std::string> preset_names() { return {"deepseek-v3", "kimi-k2", "deepseek-v2-lite"}; }

ModelShape preset_shape(const std::string& name) {
  // config.json of deepseek-ai/DeepSeek-V3, moonshotai/Kimi-K2-Instruct, deepseek-ai/DeepSeek-V2-Lite
  if (name == "deepseek-v3") return mla_shape(61, 128, 7168, 18432, 129280, 512, 64, 192, 128, 671e9);
  if (name == "kimi-k2") return mla_shape(61, 64, 7168, 18432, 163840, 512, 64, 192, 128, 1.04e12);
  if (name == "deepseek-v2-lite") return mla_shape(27, 16, 2048, 10944, 102400, 512, 64, 192, 128, 15.7e9);
  fail("--preset {}: unknown (presets: {}; natively compressed caches: {})", name, fmt::join(preset_names(), ", "),
       fmt::join(native_kv_preset_names(), ", "));
}

std::vector<Scenario> seed_scenarios() {
  return {{"short context, large batch (4K x 8)", 4096, 8},
          {"long context, small batch (32K x 2)", 32768, 2},
          {"very long context, one request (128K x 1)", 131072, 1}};
}

PlanResult make_plan(const PlanInput& in) {
  in.shape.validate();
  SLIMKV_CHECK(in.context_tokens >= 1 && in.context_tokens <= (int64_t{1} << 40), "--ctx must be in 1..2^40 (got {})",
               in.context_tokens);
  SLIMKV_CHECK(in.batch >= 1 && in.batch <= (int64_t{1} << 30), "--batch must be in 1..2^30 (got {})", in.batch);
  SLIMKV_CHECK(in.memory_gib >= 0 && in.memory_gib < 1e9, "--memory must be >= 0 GiB (got {})", in.memory_gib);
  SLIMKV_CHECK(in.max_batched_tokens >= 1, "--max-num-batched-tokens must be >= 1");
  SLIMKV_CHECK(in.shape.kv_layers.empty() || static_cast<int64_t>(in.shape.kv_layers.size()) == in.shape.num_layers,
               "memory plan: {} layer specs for {} layers", in.shape.kv_layers.size(), in.shape.num_layers);
  PlanResult r;
  const int32_t block = 8;
  const std::vector<KvLayerSpec> specs = in.shape.layer_specs();
  CompressionConfig cc = in.compress;  // "auto" plans as the baseline dtype; planning needs no calibration file
  const std::string base = in.baseline_kv_dtype == "bf16" ? "f16" : in.baseline_kv_dtype;  // same bytes
  kv_dtype_bytes_x2(base);
  SLIMKV_CHECK(base == "f16" || base == "f32", "--baseline-kv-dtype must be f16, bf16 or f32 (got {})",
               in.baseline_kv_dtype);
  CompressionConfig baseline;
  baseline.kv_cache_dtype = base;
  r.before = breakdown(in, baseline.layout(specs, block));  // the model's own windows count, uncompressed
  if (cc.kv_cache_dtype == KvCacheDtype::Auto) cc.kv_cache_dtype = base;
  if (cc.low_rank() && cc.kv_calibration.empty()) cc.kv_calibration = "(not needed to plan)";
  r.compressed = cc.changes_bytes(baseline.dtype());
  if (r.compressed) {
    r.after = breakdown(in, cc.layout(specs, block));
  } else {
    r.after = r.before;
  }
  r.seed_formula_bytes = mul(mul(mul(mul(mul(2, in.shape.num_layers), in.shape.num_heads), in.shape.head_dim),
                                 mul(in.context_tokens, in.batch)),
                             kv_dtype_bytes_x2(in.baseline_kv_dtype)) / 2;
  r.overall_reduction = 1.0 - static_cast<double>(r.after.total_bytes) / static_cast<double>(r.before.total_bytes);
  r.activation_assumption = fmt::format(
      "activations: one step of min({}, ctx x batch) tokens x (6 x hidden + 3 x ffn) f32 values + batch x vocab f32 "
      "logits", in.max_batched_tokens);
  if (in.memory_gib > 0) {
    const int64_t budget = static_cast<int64_t>(in.memory_gib * 1073741824.0);
    auto fit = [&](bool after, bool vary_batch) {
      const int64_t hi = vary_batch ? (int64_t{1} << 30) : (int64_t{1} << 40);
      return largest_fit(hi, budget, [&](int64_t x) {
        if (x == 0) return int64_t{0};
        PlanInput p = in;
        (vary_batch ? p.batch : p.context_tokens) = x;
        p.memory_gib = 0;
        try {
          PlanResult q = make_plan(p);
          return (after ? q.after : q.before).total_bytes;
        } catch (const Error&) {
          return std::numeric_limits<int64_t>::max();
        }
      });
    };
    r.max_batch_before = fit(false, true);
    r.max_batch_after = fit(true, true);
    r.max_context_before = fit(false, false);
    r.max_context_after = fit(true, false);
    if (r.max_context_after >= (int64_t{1} << 40)) r.max_context_after = -2;  // retention caps KV per sequence
  }
  return r;
}

}  // namespace slimkv
