#include "compress/compression_config.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/checked_math.h"
#include <fmt/ranges.h>
#include "compress/stream_kinds.h"
#include "core/mapped_file.h"

namespace slimkv {

namespace {

KvDtype storage_dtype(KvCacheDtype d) {  // auto = f32
  switch (d) {
    case KvCacheDtype::Auto:
    case KvCacheDtype::F32: return KvDtype::F32;
    case KvCacheDtype::F16: return KvDtype::F16;
    case KvCacheDtype::Int8: return KvDtype::Int8;
    case KvCacheDtype::Int4: return KvDtype::Int4;
    case KvCacheDtype::Tq4: return KvDtype::Tq4;
    case KvCacheDtype::Tq3: return KvDtype::Tq3;
  }
  return KvDtype::F32;
}

}  // namespace

KvDtype CompressionConfig::select_dtype() const { return storage_dtype(kv_select_dtype); }
KvDtype CompressionConfig::dtype() const { return enabled ? storage_dtype(kv_cache_dtype) : KvDtype::F32; }

KvDtype CompressionConfig::v_dtype() const {
  return !enabled || kv_cache_dtype_v == KvCacheDtype::Auto ? dtype() : storage_dtype(kv_cache_dtype_v);
}

KvDtype CompressionConfig::residual_dtype() const {
  return kv_residual_dtype == KvCacheDtype::Auto ? KvDtype::Int8 : storage_dtype(kv_residual_dtype);
}

bool CompressionConfig::rotate() const {
  if (!enabled) return false;
  if (kv_quant_rotation == KvRotation::None) return false;
  if (kv_quant_rotation == KvRotation::Hadamard) return true;
  // auto: one rotation for the layer's keys and values, on when either is quantized
  return kv_dtype_has_integer_codes(dtype()) || kv_dtype_has_integer_codes(v_dtype());
}

bool CompressionConfig::low_rank() const {
  return enabled && (kv_compression_rank > 0 || kv_compression_rank_k > 0 || kv_compression_rank_v > 0 ||
                     !kv_layer_compress_ratio.empty());
}

bool CompressionConfig::changes_cache() const {
  return enabled && (dtype() != KvDtype::F32 || v_dtype() != KvDtype::F32 || rotate() || low_rank() || sparse() ||
                     dynamic() || select() || residual_tokens() > 0);
}

bool CompressionConfig::changes_bytes(KvDtype baseline) const {
  return enabled && (dtype() != baseline || v_dtype() != baseline || low_rank() || sparse() || dynamic() ||
                     select_sketch() || residual_tokens() > 0);
}

int32_t CompressionConfig::rank_k(int32_t layer, int32_t hd) const {
  if (!enabled) return hd;
  if (kv_compression_rank_k > 0) return kv_compression_rank_k;
  if (!kv_layer_compress_ratio.empty()) return hd / kv_layer_compress_ratio[layer];
  return kv_compression_rank > 0 ? kv_compression_rank : hd;
}

int32_t CompressionConfig::rank_v(int32_t layer, int32_t hd) const {
  if (!enabled) return hd;
  if (kv_compression_rank_v > 0) return kv_compression_rank_v;
  if (!kv_layer_compress_ratio.empty()) return hd / kv_layer_compress_ratio[layer];
  return kv_compression_rank > 0 ? kv_compression_rank : hd;
}

namespace {

std::vector<KvLayerSpec> uniform_specs(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim) {
  return std::vector<KvLayerSpec>(std::max(num_layers, 0), KvLayerSpec{num_kv_heads, head_dim, head_dim, 0});
}

}  // namespace

void CompressionConfig::validate(int32_t num_layers, int32_t head_dim) const {
  validate(uniform_specs(num_layers, 1, head_dim));
}

void CompressionConfig::validate_residual(const std::vector<KvLayerSpec>& layers) const {
  SLIMKV_CHECK(kv_residual_tokens >= 0 && kv_residual_tokens <= (1 << 20),
               "--kv-residual-tokens must be in 0..{} (got {})", 1 << 20, kv_residual_tokens);
  if (residual_tokens() == 0) return;
  SLIMKV_CHECK(!sparse() && !dynamic(), "--kv-residual-tokens: a residual window keeps every token (at two "
               "precisions); it does not combine with --kv-sparse-mode {}", kv_sparse_mode.name());
  SLIMKV_CHECK(!low_rank(), "--kv-residual-tokens does not combine with low-rank K/V");
  for (size_t l = 0; l < layers.size(); ++l) {
    const KvLayerSpec& s = layers[l];
    SLIMKV_CHECK(!s.v_in_k && s.entry_tokens <= 1 && (s.kind == KvRecordKind::Attention || s.state_floats > 0),
                 "--kv-residual-tokens: layer {} is not plain attention (a latent cache or natively compressed "
                 "streams keep their own records)", l);
  }
}

void CompressionConfig::validate(const std::vector<KvLayerSpec>& layers) const {
  const int32_t num_layers = static_cast<int32_t>(layers.size());
  if (!enabled) return;
  // natively compressed streams (DeepSeek-V4's entries; its indexer keys and compressor state come with them)
  const bool native = std::any_of(layers.begin(), layers.end(), [](const KvLayerSpec& l) {
    return l.entry_tokens > 1 || (l.kind != KvRecordKind::Attention && l.state_floats == 0);
  });
  const bool recurrent = std::any_of(layers.begin(), layers.end(), [](const KvLayerSpec& l) {
    return l.state_floats > 0;
  });
  SLIMKV_CHECK(!recurrent || !low_rank(), "low-rank K/V: this model has recurrent-state layers (linear attention), "
               "which the calibration of bases per layer does not cover; compress its attention layers by dtype or "
               "retention instead");
  if (native) {  // DeepSeek-V4: the model compresses and selects by itself; only the storage dtype composes
    SLIMKV_CHECK(kv_layer_compress_ratio.empty(), "--kv-layer-compress-ratio: this model compresses its own cache "
                 "(DeepSeek-V4's per-layer ratios 0/4/128 come from its weights and are printed at load); they "
                 "cannot be overridden");
    SLIMKV_CHECK(kv_sparse_mode == KvSparseMode::Off, "--kv-sparse-mode {}: this model selects its compressed "
                 "entries natively (the lightning indexer); use --kv-sparse-topk K alone to change its top-k",
                 kv_sparse_mode.name());
    SLIMKV_CHECK(!low_rank(), "low-rank K/V does not apply to a natively compressed (DeepSeek-V4) cache");
  }
  SLIMKV_CHECK(kv_evict_policy == KvEvictPolicy::Drop || dynamic() || !sparse(),
               "--kv-evict-policy merge needs --kv-sparse-mode dynamic (a static window evicts by position)");
  SLIMKV_CHECK(kv_sparse_schedule == KvSparseSchedule::Uniform || dynamic() ||
                   (select() && kv_sparse_schedule == KvSparseSchedule::Auto),
               "--kv-sparse-schedule {} needs --kv-sparse-mode dynamic (select: uniform or auto)",
               kv_sparse_schedule.name());
  SLIMKV_CHECK(kv_sparse_schedule != KvSparseSchedule::Auto || !kv_calibration.empty() ||
                   !kv_sparse_layer_topk.empty(),
               "--kv-sparse-schedule auto needs --kv-calibration FILE (from `slimkv calibrate`: its attention "
               "profile)");
  SLIMKV_CHECK(kv_sparse_layer_topk.empty() || dynamic(), "--kv-sparse-layer-topk needs --kv-sparse-mode dynamic");
  if (!kv_sparse_layer_topk.empty()) {
    SLIMKV_CHECK(static_cast<int32_t>(kv_sparse_layer_topk.size()) == num_layers,
                 "--kv-sparse-layer-topk has {} entries but the model has {} layers", kv_sparse_layer_topk.size(),
                 num_layers);
    for (int32_t l = 0; l < num_layers; ++l) {
      SLIMKV_CHECK(layers[l].window_tokens > 0 || kv_sparse_layer_topk[l] >= kv_sink_tokens + kv_recent_window,
                   "--kv-sparse-layer-topk entry {} (layer {}) is smaller than --kv-sink-tokens {} + "
                   "--kv-recent-window {}", kv_sparse_layer_topk[l], l, kv_sink_tokens, kv_recent_window);
    }
  }
  SLIMKV_CHECK(kv_evict_during_prefill >= 0 && kv_evict_during_prefill <= (1 << 24),
               "--kv-evict-during-prefill must be >= 0 tokens (got {})", kv_evict_during_prefill);
  SLIMKV_CHECK(kv_evict_during_prefill == 0 || dynamic(), "--kv-evict-during-prefill needs --kv-sparse-mode dynamic");
  if (dynamic()) {
    SLIMKV_CHECK(kv_recent_window >= 1, "--kv-sparse-mode dynamic needs --kv-recent-window W >= 1");
    SLIMKV_CHECK(kv_sparse_topk >= kv_sink_tokens + kv_recent_window,
                 "--kv-sparse-topk {} is smaller than --kv-sink-tokens {} + --kv-recent-window {}", kv_sparse_topk,
                 kv_sink_tokens, kv_recent_window);
  }
  validate_residual(layers);
  validate_select(layers);
  if (sparse() || dynamic() || select()) {
    SLIMKV_CHECK(kv_sink_tokens >= 0 && kv_sink_tokens <= (1 << 20), "--kv-sink-tokens must be >= 0 (got {})",
                 kv_sink_tokens);
    SLIMKV_CHECK(kv_recent_window >= 1 && kv_recent_window <= (1 << 24),
                 "--kv-sparse-mode static needs --kv-recent-window W >= 1 (got {})", kv_recent_window);
  }
  for (const KvLayerSpec& l : layers) {
    const int32_t hd = std::min(l.head_dim_k, l.head_dim_v);
    for (auto [name, r] : {std::pair{"--kv-compression-rank", kv_compression_rank},
                           std::pair{"--kv-compression-rank-k", kv_compression_rank_k},
                           std::pair{"--kv-compression-rank-v", kv_compression_rank_v}}) {
      SLIMKV_CHECK(r >= 0 && r <= hd, "{} {} must be in 1..{} (the head dim)", name, r, hd);
    }
  }
  if (!kv_layer_compress_ratio.empty()) {
    SLIMKV_CHECK(static_cast<int32_t>(kv_layer_compress_ratio.size()) == num_layers,
                 "--kv-layer-compress-ratio has {} entries but the model has {} layers",
                 kv_layer_compress_ratio.size(), num_layers);
    for (int32_t l = 0; l < num_layers; ++l) {
      const int32_t r = kv_layer_compress_ratio[l];
      SLIMKV_CHECK(r >= 1 && layers[l].head_dim_k % r == 0 && layers[l].head_dim_v % r == 0,
                   "--kv-layer-compress-ratio entry {} must divide the head dim {} (layer {})", r,
                   layers[l].head_dim_k, l);
    }
    SLIMKV_CHECK(kv_compression_rank == 0, "give either --kv-compression-rank or --kv-layer-compress-ratio, not both");
  }
  for (int32_t l = 0; l < num_layers && low_rank(); ++l) {
    SLIMKV_CHECK(!layers[l].v_in_k, "low-rank K/V does not apply to a latent (MLA) cache: it is already low rank "
                 "(layer {})", l);
  }
  if (low_rank()) {
    SLIMKV_CHECK(!kv_calibration.empty(), "low-rank K/V needs a calibration file (--kv-calibration FILE from "
                                          "`slimkv calibrate`)");
  }
  for (int32_t l = 0; l < num_layers; ++l) {
    // An MLA record is stored as two parts (latent, rope key), each scaled and rotated on its own.
    const KvLayerSpec& ls = layers[l];
    if (ls.state_floats > 0) continue;  // a recurrent state is never transformed
    SLIMKV_CHECK(!ls.v_in_k || v_dtype() == dtype(), "--kv-cache-dtype-v: layer {} keeps its values inside the key "
                 "record (a latent cache), so they share the keys' dtype", l);
    const std::vector<int32_t> parts =
        ls.v_in_k ? std::vector<int32_t>{ls.head_dim_v, ls.head_dim_k - ls.head_dim_v}
                  : std::vector<int32_t>{rank_k(l, ls.head_dim_k), rank_v(l, ls.head_dim_v)};
    for (size_t part = 0; part < parts.size(); ++part) {
      const int32_t r = parts[part];
      const KvDtype pd = !ls.v_in_k && part == 1 ? v_dtype() : dtype();  // this part's dtype
      SLIMKV_CHECK(pd != KvDtype::Int4 || r % 2 == 0, "--kv-cache-dtype int4 needs even row sizes (got {})", r);
      // tq's codebook is the rotated coordinates' (clipped at 2.7 RMS): unrotated outlier channels would clip
      SLIMKV_CHECK((pd != KvDtype::Tq4 && pd != KvDtype::Tq3) || (is_power_of_two(r) && rotate()),
                   "--kv-cache-dtype {} needs the Hadamard rotation (power-of-two row sizes, not "
                   "--kv-quant-rotation none); layer {} has rows of {}", kv_dtype_name(pd), l, r);
      SLIMKV_CHECK(kv_quant_rotation != KvRotation::Hadamard || is_power_of_two(r),
                   "--kv-quant-rotation hadamard needs power-of-two row sizes (layer {} has {})", l, r);
    }
  }
}

std::vector<int32_t> CompressionConfig::layer_topk(const std::vector<KvLayerSpec>& layers) const {
  std::vector<int32_t> out(layers.size(), 0);
  if (!dynamic()) return out;
  std::vector<size_t> full;  // the layers retention applies to
  for (size_t l = 0; l < layers.size(); ++l) {
    if (layers[l].window_tokens == 0 && layers[l].state_floats == 0) full.push_back(l);
  }
  if (full.empty()) return out;
  const int32_t fixed = kv_sink_tokens + kv_recent_window, free_tokens = kv_sparse_topk - fixed;
  if (!kv_sparse_layer_topk.empty()) {
    for (size_t l : full) out[l] = kv_sparse_layer_topk[l];
    return out;
  }
  SLIMKV_CHECK(kv_sparse_schedule != KvSparseSchedule::Auto, "--kv-sparse-schedule auto: budgets not resolved from the calibration "
               "file (resolve_sparse_schedule)");
  if (kv_sparse_schedule == KvSparseSchedule::Uniform || full.size() == 1) {
    for (size_t l : full) out[l] = kv_sparse_topk;
    return out;
  }
  // pyramid (PyramidKV): the selectable budget falls linearly from 1.5x at the first layer to 0.5x at the last,
  // the same total; in whole tokens, remainders to the lowest layers.
  const size_t n = full.size();
  std::vector<double> share(n);
  for (size_t i = 0; i < n; ++i) share[i] = free_tokens * (1.5 - static_cast<double>(i) / static_cast<double>(n - 1));
  int64_t total = static_cast<int64_t>(free_tokens) * static_cast<int64_t>(n), given = 0;
  for (size_t i = 0; i < n; ++i) {
    out[full[i]] = static_cast<int32_t>(share[i]);
    given += out[full[i]];
  }
  for (size_t i = 0; given < total; i = (i + 1) % n, ++given) ++out[full[i]];
  for (size_t l : full) out[l] += fixed;
  return out;
}

KvLayout CompressionConfig::layout(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim, int32_t bs) const {
  return layout(uniform_specs(num_layers, num_kv_heads, head_dim), bs);
}

KvLayout CompressionConfig::layout(const std::vector<KvLayerSpec>& specs, int32_t bs) const {
  validate(specs);
  KvLayout out = KvLayout::from_specs(specs, bs);
  const std::vector<int32_t> topk = layer_topk(specs);
  for (int32_t l = 0; l < out.num_layers(); ++l) {
    KvLayerGeometry& g = out.layers[l];
    if (specs[l].kind == KvRecordKind::State) continue;  // a compressor's or a recurrent state stays exact (F32)
    g.dtype = dtype();
    g.v_dtype = v_dtype();
    g.k_dim = rank_k(l, g.head_dim_k);
    g.v_dim = rank_v(l, g.head_dim_v);
    // auto rotation only where it applies (an MLA record rotates its latent and rope key apart: both powers of two)
    g.rotate = rotate() && (g.k_split() > 0 ? is_power_of_two(g.k_split()) && is_power_of_two(g.k_dim - g.k_split())
                                            : is_power_of_two(g.k_dim) && is_power_of_two(g.v_dim));
    if (specs[l].kind == KvRecordKind::IndexKeys && (g.dtype == KvDtype::F32 || g.dtype == KvDtype::F16)) {
      g.dtype = g.v_dtype = KvDtype::F16;  // indexer keys are F16 unless the cache is narrower
    }
    if (specs[l].window_tokens > 0 || specs[l].entry_tokens > 1) continue;  // windows / entries are the model's
    if (select() && specs[l].kind == KvRecordKind::Attention) {
      g.select.scorer = kv_select_index == KvSelectIndex::Sketch   ? KvSelectScorer::Sketch
                        : kv_select_index == KvSelectIndex::Oracle ? KvSelectScorer::Oracle
                                                                   : KvSelectScorer::Pages;
      g.select.topk_tokens = kv_sparse_topk;
      g.select.fraction = kv_select_fraction;
      g.select.mass = kv_select_mass;
      g.select.sink_tokens = kv_sink_tokens;
      g.select.window_tokens = kv_recent_window;
    }
    if (sparse() && kv_recent_window > 0) {
      g.spec = KvGroupSpec::window(kv_recent_window, kv_sink_tokens);
    } else if (dynamic() && topk[l] > 0) {
      g.spec = KvGroupSpec::dynamic_topk(topk[l], kv_sink_tokens, kv_recent_window, merge(), prefill_evict_tokens());
    }
  }
  append_streams(*this, out);  // the residual window's and select's index streams (compress/stream_kinds.h)
  out.assign_groups();
  return out;
}

void CompressionConfig::validate_select(const std::vector<KvLayerSpec>& layers) const {
  const bool select_fields = kv_select_index != KvSelectIndex::Sketch || kv_select_rank != 16 ||
                             kv_select_fraction != 0 || kv_select_mass != 0 ||
                             kv_select_dtype != KvCacheDtype::Int8;
  SLIMKV_CHECK(select() || !select_fields, "--kv-select-index / --kv-select-rank / --kv-select-fraction / "
               "--kv-select-mass need --kv-sparse-mode select");
  if (!select()) return;
  SLIMKV_CHECK(kv_select_fraction >= 0 && kv_select_fraction <= 1, "--kv-select-fraction must be in [0, 1] (got {})",
               kv_select_fraction);
  SLIMKV_CHECK(kv_select_mass >= 0 && kv_select_mass < 1, "--kv-select-mass must be in [0, 1) (got {})",
               kv_select_mass);
  SLIMKV_CHECK(kv_select_fraction > 0 || kv_sparse_topk > 0 || kv_select_mass > 0, "--kv-sparse-mode select needs a "
               "budget: --kv-sparse-topk K (tokens each query reads), --kv-select-fraction f or --kv-select-mass p");
  SLIMKV_CHECK(kv_sparse_topk == 0 || kv_sparse_topk >= kv_sink_tokens + kv_recent_window,
               "--kv-sparse-topk {} is smaller than --kv-sink-tokens {} + --kv-recent-window {}", kv_sparse_topk,
               kv_sink_tokens, kv_recent_window);
  SLIMKV_CHECK(kv_recent_window >= 1, "--kv-sparse-mode select needs --kv-recent-window W >= 1 (the query's own "
               "token is read always)");
  SLIMKV_CHECK(kv_select_rank >= 1 && kv_select_rank <= 256, "--kv-select-rank must be in 1..256 (got {})",
               kv_select_rank);
  SLIMKV_CHECK(kv_select_dtype == KvCacheDtype::Int8 || kv_select_dtype == KvCacheDtype::Int4,
               "--kv-select-dtype must be int8 or int4 (got {})", kv_select_dtype.name());
  SLIMKV_CHECK(kv_select_dtype != KvCacheDtype::Int4 || is_power_of_two(kv_select_rank), "--kv-select-dtype int4 "
               "rotates the sketch: --kv-select-rank must be a power of two (got {})", kv_select_rank);
  SLIMKV_CHECK(kv_select_index != KvSelectIndex::Sketch || !kv_calibration.empty(), "--kv-select-index sketch "
               "needs --kv-calibration FILE (from `slimkv calibrate`: the sketch is the keys' leading principal "
               "directions)");
  SLIMKV_CHECK(residual_tokens() == 0 || kv_recent_window >= residual_tokens(), "--kv-sparse-mode select with a "
               "residual window: --kv-recent-window {} must cover --kv-residual-tokens {} (the window's rows are read "
               "whole)", kv_recent_window, residual_tokens());
  for (size_t l = 0; l < layers.size(); ++l) {
    const KvLayerSpec& s = layers[l];
    SLIMKV_CHECK(!s.v_in_k && s.entry_tokens <= 1 && (s.kind == KvRecordKind::Attention || s.state_floats > 0),
                 "--kv-sparse-mode select: layer {} is not plain attention (a latent cache, or a model that selects "
                 "its own compressed entries)", l);
    SLIMKV_CHECK(!select_sketch() || s.state_floats > 0 || kv_select_rank <= s.head_dim_k, "--kv-select-rank {} "
                 "exceeds layer {}'s head dim {}", kv_select_rank, l, s.head_dim_k);
  }
}

std::string CompressionConfig::fingerprint() const {  // what the stored bytes depend on
  std::string ranks;
  if (low_rank()) {
    ranks = fmt::format(" rank={}/{}/{} ratio={} calib={}", kv_compression_rank, kv_compression_rank_k,
                        kv_compression_rank_v, fmt::join(kv_layer_compress_ratio, ","), kv_calibration);
  }
  std::string sparse_part = sparse() || dynamic() || select()
                                ? fmt::format(" sparse={} sinks={} window={} topk={} evict={} schedule={} layers={}",
                                              kv_sparse_mode.name(), kv_sink_tokens, kv_recent_window, kv_sparse_topk,
                                              kv_evict_policy.name(), kv_sparse_schedule.name(),
                                              fmt::join(kv_sparse_layer_topk, ","))
                                : "";
  if (prefill_evict_tokens() > 0) sparse_part += fmt::format(" prefill_evict={}", prefill_evict_tokens());
  if (select()) {
    sparse_part += fmt::format(" select={} rank={}x{} fraction={} mass={}", kv_select_index.name(), kv_select_rank,
                               kv_select_dtype.name(), kv_select_fraction, kv_select_mass);
  }
  std::string v_part = v_dtype() != dtype() ? fmt::format(" v_dtype={}", kv_dtype_name(v_dtype())) : "";
  if (residual_tokens() > 0) {
    v_part += fmt::format(" residual={}x{}", residual_tokens(), kv_dtype_name(residual_dtype()));
  }
  return fmt::format("kv dtype={}{} rotation={}{}{}", kv_dtype_name(dtype()), v_part, rotate(), ranks, sparse_part);
}

namespace {

std::string ints_text(const std::vector<int32_t>& v) { return fmt::format("{}", fmt::join(v, ",")); }

int32_t parse_int(const std::string& flag, const std::string& t) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  SLIMKV_CHECK(used == t.size() && !t.empty() && v >= INT32_MIN && v <= INT32_MAX, "{} must be an integer (got '{}')",
               flag, t);
  return static_cast<int32_t>(v);
}

// A choice's spelling, checked against the field's own flag (two fields share KvCacheDtype's names).
template <class E>
Choice<E> parse_choice(const char* key, const std::string& t) {
  std::string flag = std::string("--") + key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  const std::vector<std::string> names = Choice<E>::spellings();
  SLIMKV_CHECK(std::find(names.begin(), names.end(), t) != names.end(), "{} must be one of {} (got '{}')", flag,
               fmt::join(names, ", "), t);
  return Choice<E>(t);
}

double parse_number(const std::string& flag, const std::string& t) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  SLIMKV_CHECK(used == t.size() && !t.empty() && std::isfinite(v), "{} must be a number (got '{}')", flag, t);
  return v;
}

std::vector<int32_t> parse_ints(const std::string& flag, const std::string& t) {
  std::vector<int32_t> out;
  size_t at = 0;
  while (at <= t.size() && !t.empty()) {
    const size_t comma = std::min(t.find(',', at), t.size());
    out.push_back(parse_int(flag, t.substr(at, comma - at)));
    at = comma + 1;
  }
  return out;
}

using F = CompressionField;
using T = CompressionField::Type;


}  // namespace

std::string CompressionField::flag() const {
  std::string f = std::string("--") + key;
  for (char& ch : f) ch = ch == '_' ? '-' : ch;
  return f;
}

#define SLIMKV_CHOICE(KEY, E, HELP)                                                                   \
  F{#KEY, T::Choice, HELP, Choice<E>::spellings(),                                                    \
    [](CompressionConfig& c, const std::string& t) { c.KEY = parse_choice<E>(#KEY, t); },             \
    [](const CompressionConfig& c) { return std::string(c.KEY.name()); }}
#define SLIMKV_INT(KEY, HELP)                                                                         \
  F{#KEY, T::Int, HELP, {},                                                                           \
    [](CompressionConfig& c, const std::string& t) { c.KEY = parse_int("--" #KEY, t); },              \
    [](const CompressionConfig& c) { return std::to_string(c.KEY); }}
#define SLIMKV_NUMBER(KEY, HELP)                                                                      \
  F{#KEY, T::Number, HELP, {},                                                                        \
    [](CompressionConfig& c, const std::string& t) { c.KEY = parse_number("--" #KEY, t); },           \
    [](const CompressionConfig& c) { return fmt::format("{}", c.KEY); }}
#define SLIMKV_INTS(KEY, HELP)                                                                        \
  F{#KEY, T::IntList, HELP, {},                                                                       \
    [](CompressionConfig& c, const std::string& t) { c.KEY = parse_ints("--" #KEY, t); },             \
    [](const CompressionConfig& c) { return ints_text(c.KEY); }}

const std::vector<CompressionField>& compression_fields() {
  static const std::vector<CompressionField> fields = [] {
    std::vector<CompressionField> f = {
        F{"kv_cache_compression", T::OnOff, "on|off (off: the plain f32 cache, bit-identical to no compression)",
          {"on", "off"},
          [](CompressionConfig& c, const std::string& t) {
            SLIMKV_CHECK(t == "on" || t == "off", "--kv-cache-compression must be on or off (got '{}')", t);
            c.enabled = t == "on";
          },
          [](const CompressionConfig& c) { return std::string(c.enabled ? "on" : "off"); }},
        SLIMKV_CHOICE(kv_cache_dtype, KvCacheDtype,
                      "KV storage dtype: auto|f32|f16|int8|int4|tq4|tq3 (tq: rotation + a Lloyd-Max codebook)"),
        SLIMKV_CHOICE(kv_cache_dtype_v, KvCacheDtype,
                      "Values' storage dtype where it differs from the keys' (asymmetric bits): auto (= "
                      "--kv-cache-dtype)|f32|f16|int8|int4|tq4|tq3"),
        SLIMKV_CHOICE(kv_quant_rotation, KvRotation,
                      "Rotation before quantizing: auto|hadamard|none (auto: hadamard for int8/int4)"),
        SLIMKV_INT(kv_compression_rank, "Low-rank K/V latent size per head"),
        SLIMKV_INT(kv_compression_rank_k, "Low-rank size for keys only"),
        SLIMKV_INT(kv_compression_rank_v, "Low-rank size for values only"),
        SLIMKV_INTS(kv_layer_compress_ratio, "Per-layer ratios r1,r2,...: rank = head_dim / r (one per layer)"),
        F{"kv_calibration", T::Text, "Calibration file from `slimkv calibrate`", {},
          [](CompressionConfig& c, const std::string& t) { c.kv_calibration = t; },
          [](const CompressionConfig& c) { return c.kv_calibration; }},
        SLIMKV_CHOICE(kv_sparse_mode, KvSparseMode,
                      "off|static|dynamic|select (static: sinks + recent window; dynamic: + most-attended blocks, "
                      "the rest evicted; select: every token kept, each query reads sinks + window + its top-scored "
                      "tokens)"),
        SLIMKV_INT(kv_sparse_topk, "Dynamic mode: tokens kept in all; select mode: tokens each query reads"),
        SLIMKV_CHOICE(kv_select_index, KvSelectIndex,
                      "Select mode's scorer: sketch (a calibrated low-rank int8 key per token, --kv-calibration) | "
                      "oracle (the stored keys' true q.k: eval only) | pages (Quest's per-page bounds: eval only)"),
        SLIMKV_INT(kv_select_rank, "Select mode: the sketch's size per KV head (default 16)"),
        SLIMKV_CHOICE(kv_select_dtype, KvCacheDtype,
                      "Select mode: the sketch's codes, int8 (default) | int4 (rotated; a power-of-two rank)"),
        SLIMKV_NUMBER(kv_select_fraction,
                      "Select mode: each query reads this share of its context (at least sinks + window); 0: "
                      "--kv-sparse-topk tokens"),
        SLIMKV_NUMBER(kv_select_mass,
                      "Select mode, adaptive budgets: the fewest top rows whose estimated attention mass reaches p "
                      "(at most the budget above); 0: fixed budgets"),
        SLIMKV_INT(kv_sink_tokens, "Attention-sink tokens kept (default 4)"),
        SLIMKV_INT(kv_recent_window, "Recent tokens kept (static sparse mode)"),
        SLIMKV_CHOICE(kv_evict_policy, KvEvictPolicy,
                      "drop|merge (merge: evicted blocks fold into per-sequence summary rows)"),
        SLIMKV_CHOICE(kv_sparse_schedule, KvSparseSchedule,
                      "Per-layer top-K budgets with the same total: uniform | pyramid (1.5x at the first layer to "
                      "0.5x at the last) | auto (from the calibration file's attention profile, --kv-calibration; "
                      "select: a share of the context per layer and KV head, the same mean)"),
        SLIMKV_INTS(kv_sparse_layer_topk,
                    "Explicit per-layer budgets k1,k2,... (one per layer; overrides --kv-sparse-schedule)"),
        SLIMKV_INT(kv_residual_tokens,
                   "Keep each full-attention layer's last R tokens also at --kv-residual-dtype (KIVI's residual "
                   "window): attention reads them there, older rows from the cache (0: off)"),
        SLIMKV_CHOICE(kv_residual_dtype, KvCacheDtype,
                      "The residual window's dtype: auto (= int8)|f32|f16|int8|int4|tq4|tq3"),
        SLIMKV_INT(kv_evict_during_prefill,
                   "Dynamic mode: evict every N prompt tokens too (a sequence holds at most top-K + N tokens); "
                   "0: after the whole prompt"),
    };
    return f;
  }();
  return fields;
}

#undef SLIMKV_CHOICE
#undef SLIMKV_INT
#undef SLIMKV_INTS
#undef SLIMKV_NUMBER

std::string CompressionConfig::to_json(const std::string& description) const {
  const CompressionConfig d;
  nlohmann::ordered_json j;
  if (!description.empty()) j["description"] = description;
  for (const CompressionField& f : compression_fields()) {
    const std::string v = f.get(*this);
    if (v == f.get(d)) continue;  // only what differs from the defaults
    if (f.type == T::Int) j[f.key] = parse_int(f.flag(), v);
    else if (f.type == T::Number) j[f.key] = parse_number(f.flag(), v);
    else if (f.type == T::IntList) j[f.key] = parse_ints(f.flag(), v);
    else j[f.key] = v;
  }
  return j.dump(2) + "\n";
}

CompressionConfig CompressionConfig::from_json_file(const std::string& path) {
  auto j = nlohmann::json::parse(read_text_file(path), nullptr, false);
  SLIMKV_CHECK(j.is_object(), "{}: a KV config must be a JSON object", path);
  CompressionConfig c;
  std::string keys;
  for (const CompressionField& f : compression_fields()) keys += (keys.empty() ? "" : ", ") + std::string(f.key);
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const nlohmann::json& v = it.value();
    if (k == "name" || k == "description") continue;
    const auto f = std::find_if(compression_fields().begin(), compression_fields().end(),
                                [&](const CompressionField& x) { return k == x.key; });
    SLIMKV_CHECK(f != compression_fields().end(), "{}: unknown or not yet supported key '{}' (supported: {})", path,
                 k, keys);
    std::string text;
    if (f->type == T::Int) {
      SLIMKV_CHECK(v.is_number_integer(), "{}: '{}' must be an integer", path, k);
      text = std::to_string(v.get<int64_t>());
    } else if (f->type == T::Number) {
      SLIMKV_CHECK(v.is_number(), "{}: '{}' must be a number", path, k);
      text = fmt::format("{}", v.get<double>());
    } else if (f->type == T::IntList) {
      SLIMKV_CHECK(v.is_array(), "{}: {} must be a list of integers", path, k);
      std::vector<int32_t> xs;
      for (auto& x : v) {
        SLIMKV_CHECK(x.is_number_integer(), "{}: {} must be a list of integers", path, k);
        xs.push_back(x.get<int32_t>());
      }
      text = ints_text(xs);
    } else if (f->type == T::OnOff && v.is_boolean()) {
      text = v.get<bool>() ? "on" : "off";
    } else {
      SLIMKV_CHECK(v.is_string(), "{}: '{}' must be a string", path, k);
      text = v.get<std::string>();
    }
    try {
      f->set(c, text);
    } catch (const Error& e) {
      fail("{}: {}", path, e.what());
    }
  }
  return c;
}

namespace {

std::string total_note(const KvLayout& layout) {
  return layout.num_model_streams() < layout.num_layers() ? " while every stream holds a token; a residual window "
                                                            "holds only its last tokens"
                                                          : "";
}

}  // namespace

std::string describe_plan(const KvLayout& layout) {
  std::string out = "layer  group  dtype  rank_k  rank_v  rotation  bytes/token  vs f16  block table\n";
  int64_t total = 0, f16 = 0;
  for (int32_t l = 0; l < layout.num_layers(); ++l) {
    const auto& g = layout.layers[l];
    const int64_t base = static_cast<int64_t>(g.num_kv_heads) * (g.head_dim_k + g.head_dim_v) * 2;
    total += g.bytes_per_token();
    if (!g.appended()) f16 += base;  // a residual window repeats its layer's last tokens, an index sketches its keys
    out += fmt::format("{:>5}  {:>5}  {:>5}  {:>6}  {:>6}  {:>8}  {:>11}  {:>5.1f}%  {}\n", l, g.group,
                       g.v_dtype == g.dtype ? std::string(kv_dtype_name(g.dtype))
                                            : fmt::format("{}/{}", kv_dtype_name(g.dtype), kv_dtype_name(g.v_dtype)),
                       g.k_dim, g.v_dim, g.rotate ? "hadamard" : "none", g.bytes_per_token(),
                       100.0 * g.bytes_per_token() / base,
                       g.appended() ? stream_kind_of(g.kind)->describe(g) : g.spec.describe());
  }
  out += fmt::format("total  {} bytes/token = {:.1f}% of f16 ({} bytes/token){}", total, 100.0 * total / f16, f16,
                     total_note(layout));
  return out;
}

}  // namespace slimkv
