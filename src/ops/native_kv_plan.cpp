#include "ops/native_kv_plan.h"

#include <algorithm>
#include <iterator>

#include "core/check.h"

namespace slimkv {

int64_t NativeKvKind::records(int64_t ctx) const {
  if (per_sequence) return 1;
  const int64_t held = window_tokens > 0 ? std::min(ctx, window_tokens) : ctx;
  return held / tokens_per_record;
}

int64_t NativeKvShape::bytes(int64_t ctx) const {
  int64_t b = 0;
  for (const NativeKvKind& k : kinds) b += k.bytes(ctx);
  return b;
}

int64_t NativeKvShape::context_bytes(int64_t ctx) const {
  int64_t b = 0;
  for (const NativeKvKind& k : kinds) b += k.per_sequence ? 0 : k.bytes(ctx);
  return b;
}

namespace {

constexpr const char* kPresets[] = {"deepseek-v4-flash", "deepseek-v4-pro", "deepseek-v3.2", "gqa8-43l-bf16",
                                    "gqa8-61l-bf16"};

// DeepSeek-V4's streams for `csa` CSA and `hca` HCA layers of `layers` (every layer holds a 128-token raw window),
// head 512 (rope 64), indexer keys 128. Storage as DeepSeek serves it (the V4 report): entries fp8 for the 448
// non-RoPE dims + bf16 for the 64 RoPE dims (576 bytes), indexer keys fp8 + one fp32 scale (132 bytes).
// Compressor state is slimkv's: exact f32 rows of the last coff x ratio tokens.
std::vector<NativeKvKind> dsv4_kinds(int64_t layers, int64_t csa, int64_t hca) {
  return {{"sliding window (raw tokens)", layers, 1, 128, 576, "fp8 448 + bf16 64"},
          {"CSA entries (1:4)", csa, 4, 0, 576, "fp8 448 + bf16 64"},
          {"CSA indexer keys (1:4)", csa, 4, 0, 132, "fp8 128 + fp32 scale"},
          {"HCA entries (1:128)", hca, 128, 0, 576, "fp8 448 + bf16 64"},
          {"CSA compressor state", csa, 1, 0, 8 * 4 * 512 * 4, "f32, 8 tokens x [kv 1024 | score 1024]", true},
          {"CSA indexer compressor state", csa, 1, 0, 8 * 4 * 128 * 4, "f32, 8 tokens x 512", true},
          {"HCA compressor state", hca, 1, 0, 128 * 2 * 512 * 4, "f32, 128 tokens x [kv 512 | score 512]", true}};
}

NativeKvShape gqa8_bf16(int64_t layers) {  // the like-for-like dense baseline: GQA-8 x 128, bf16 K and V
  NativeKvShape s;
  s.name = fmt::format("gqa8-{}l-bf16", layers);
  s.source = fmt::format("{} layers x 8 KV heads x 128 x (K + V) x bf16", layers);
  s.num_layers = layers;
  s.kinds = {{"K + V (GQA-8, head 128)", layers, 1, 0, 8 * 128 * 2 * 2, "bf16"}};
  return s;
}

}  // namespace

bool is_native_kv_preset(const std::string& n) {
  return std::find(std::begin(kPresets), std::end(kPresets), n) != std::end(kPresets);
}

std::vector<std::string> native_kv_preset_names() { return {std::begin(kPresets), std::end(kPresets)}; }

NativeKvShape native_kv_preset(const std::string& name) {
  NativeKvShape s;
  s.name = name;
  if (name == "deepseek-v4-flash") {
    // config.json of deepseek-ai/DeepSeek-V4-Flash: 43 layers, ratios [0, 0, then 4 / 128 alternating, ending on 4]
    // (2 window-only, 21 CSA, 20 HCA), head 512 (rope 64), window 128, indexer 64 heads x 128.
    s.source = "deepseek-ai/DeepSeek-V4-Flash config.json; storage fp8 + bf16 rope (V4 report)";
    s.num_layers = 43;
    s.kinds = dsv4_kinds(43, 21, 20);
    return s;
  }
  if (name == "deepseek-v4-pro") {
    // DeepSeek-V4-Pro as its published architecture summaries give it (its config.json was not readable here):
    // 61 layers, layers 0-1 HCA, then CSA / HCA alternating from layer 2 (30 CSA, 31 HCA), head 512 (rope 64),
    // window 128, indexer 64 heads x 128 (top-1024). Cross-check: in bf16 this gives 9.62 GiB at 1M tokens, the
    // ~9.6 GiB a public write-up computed for the 61-layer model.
    s.source = "DeepSeek-V4-Pro architecture (61 layers: 2 HCA + 59 CSA/HCA alternating); storage as V4-Flash";
    s.num_layers = 61;
    s.kinds = dsv4_kinds(61, 30, 31);
    return s;
  }
  if (name == "deepseek-v3.2") {
    // DeepSeek-V3.2-Exp: 61 MLA layers, latent 512 + rope 64 per token, indexer keys 128 per token. Storage as
    // FlashMLA serves it: fp8 latent + 4 fp32 scales + bf16 rope = 656 bytes; indexer keys fp8 + fp32 scale.
    s.source = "deepseek-ai/DeepSeek-V3.2-Exp config.json; FlashMLA fp8 cache layout";
    s.num_layers = 61;
    s.kinds = {{"MLA latent + rope key", 61, 1, 0, 656, "fp8 512 + 4 fp32 scales + bf16 64"},
               {"indexer keys", 61, 1, 0, 132, "fp8 128 + fp32 scale"}};
    return s;
  }
  if (name == "gqa8-43l-bf16") return gqa8_bf16(43);  // V4-Flash's depth
  if (name == "gqa8-61l-bf16") return gqa8_bf16(61);  // V4-Pro's and V3.2's depth
  fail("--preset {}: unknown native-KV preset ({})", name, fmt::join(kPresets, ", "));
}

}  // namespace slimkv
