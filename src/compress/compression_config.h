// The one validated configuration of KV-cache compression: storage dtype (f32/f16/int8/int4), the Hadamard rotation
// before quantizing, calibrated low-rank K/V latents per layer, static or dynamic retention. Typed (choices are
// enums, parsed once) and spelled once: compression_fields() is the table the flags, the --kv-config JSON keys (the
// flag names with underscores), to_json and the list of supported keys all read. Must not know: requests or kernels.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compress/choice.h"
#include "core/dtype.h"
#include "kv/kv_layout.h"

namespace slimkv {

enum class KvCacheDtype : uint8_t { Auto, F32, F16, Int8, Int4, Tq4, Tq3 };  // auto = f32
enum class KvRotation : uint8_t { Auto, Hadamard, None };           // auto: hadamard for int8 / int4
enum class KvSparseMode : uint8_t { Off, Static, Dynamic, Select };
// What select mode scores to choose a query's rows: a calibrated low-rank sketch of each key, stored beside the
// cache (sketch); or, for `eval` only (they read every key each step), the true scores q·k of the stored keys
// (oracle: the best any token selection can do at the same reads) or Quest's per-page upper bounds (pages).
enum class KvSelectIndex : uint8_t { Sketch, Oracle, Pages };
enum class KvEvictPolicy : uint8_t { Drop, Merge };
enum class KvSparseSchedule : uint8_t { Uniform, Pyramid, Auto };

template <>
struct ChoiceNames<KvCacheDtype> {
  static constexpr const char* flag = "--kv-cache-dtype";
  static constexpr std::array<std::pair<KvCacheDtype, const char*>, 7> names = {
      {{KvCacheDtype::Auto, "auto"}, {KvCacheDtype::F32, "f32"}, {KvCacheDtype::F16, "f16"},
       {KvCacheDtype::Int8, "int8"}, {KvCacheDtype::Int4, "int4"}, {KvCacheDtype::Tq4, "tq4"},
       {KvCacheDtype::Tq3, "tq3"}}};
};
template <>
struct ChoiceNames<KvRotation> {
  static constexpr const char* flag = "--kv-quant-rotation";
  static constexpr std::array<std::pair<KvRotation, const char*>, 3> names = {
      {{KvRotation::Auto, "auto"}, {KvRotation::Hadamard, "hadamard"}, {KvRotation::None, "none"}}};
};
template <>
struct ChoiceNames<KvSparseMode> {
  static constexpr const char* flag = "--kv-sparse-mode";
  static constexpr std::array<std::pair<KvSparseMode, const char*>, 4> names = {
      {{KvSparseMode::Off, "off"}, {KvSparseMode::Static, "static"}, {KvSparseMode::Dynamic, "dynamic"},
       {KvSparseMode::Select, "select"}}};
};
template <>
struct ChoiceNames<KvSelectIndex> {
  static constexpr const char* flag = "--kv-select-index";
  static constexpr std::array<std::pair<KvSelectIndex, const char*>, 3> names = {
      {{KvSelectIndex::Sketch, "sketch"}, {KvSelectIndex::Oracle, "oracle"}, {KvSelectIndex::Pages, "pages"}}};
};
template <>
struct ChoiceNames<KvEvictPolicy> {
  static constexpr const char* flag = "--kv-evict-policy";
  static constexpr std::array<std::pair<KvEvictPolicy, const char*>, 2> names = {
      {{KvEvictPolicy::Drop, "drop"}, {KvEvictPolicy::Merge, "merge"}}};
};
template <>
struct ChoiceNames<KvSparseSchedule> {
  static constexpr const char* flag = "--kv-sparse-schedule";
  static constexpr std::array<std::pair<KvSparseSchedule, const char*>, 3> names = {
      {{KvSparseSchedule::Uniform, "uniform"}, {KvSparseSchedule::Pyramid, "pyramid"},
       {KvSparseSchedule::Auto, "auto"}}};
};

struct CompressionConfig {
  bool enabled = true;                   // --kv-cache-compression on|off (off: plain f32 cache, bit-identical)
  Choice<KvCacheDtype> kv_cache_dtype = KvCacheDtype::Auto;  // --kv-cache-dtype auto|f32|f16|int8|int4|tq4|tq3
                                                             // (auto = f32)
  Choice<KvCacheDtype> kv_cache_dtype_v = KvCacheDtype::Auto;  // --kv-cache-dtype-v: the values' dtype where it
                                                               // differs from the keys' (auto: --kv-cache-dtype)
  Choice<KvRotation> kv_quant_rotation = KvRotation::Auto;    // --kv-quant-rotation auto|hadamard|none
  int32_t kv_compression_rank = 0;       // --kv-compression-rank R: latent size of K and V per head (0 = full)
  int32_t kv_compression_rank_k = 0;     // --kv-compression-rank-k: keys only (overrides R)
  int32_t kv_compression_rank_v = 0;     // --kv-compression-rank-v: values only (overrides R)
  std::vector<int32_t> kv_layer_compress_ratio;  // --kv-layer-compress-ratio r1,r2,..: rank = head_dim / r_l
  std::string kv_calibration;            // --kv-calibration FILE from `slimkv calibrate` (needed for low rank)
  Choice<KvSparseMode> kv_sparse_mode = KvSparseMode::Off;  // --kv-sparse-mode off|static|dynamic|select (static:
                                         // sinks + recent window, StreamingLLM; dynamic: + the most-attended blocks
                                         // up to the top-K budget, the rest evicted; select: every token kept, each
                                         // query reads sinks + window + its top-scored rows, kv_select_*)
  int32_t kv_sparse_topk = 0;            // --kv-sparse-topk K: tokens kept in all (sinks + window + top blocks);
                                         // select: tokens each query reads in all (unless kv_select_fraction)
  Choice<KvSelectIndex> kv_select_index = KvSelectIndex::Sketch;  // --kv-select-index sketch|oracle|pages
  int32_t kv_select_rank = 16;           // --kv-select-rank r: the sketch's size per KV head (+ an fp16 scale)
  Choice<KvCacheDtype> kv_select_dtype = KvCacheDtype::Int8;  // --kv-select-dtype int8|int4: the sketch's codes
                                         // (int4: rotated first, a power-of-two rank)
  double kv_select_fraction = 0;         // --kv-select-fraction f: each query reads ceil(f x its context) rows
                                         // (at least sinks + window); 0: kv_sparse_topk tokens
  double kv_select_mass = 0;             // --kv-select-mass p: adaptive budgets — the fewest top rows whose
                                         // estimated attention mass (with the sinks' and window's) reaches p, at
                                         // most the budget above (none: the whole context); 0: fixed budgets
  int32_t kv_sink_tokens = 4;            // --kv-sink-tokens S
  int32_t kv_recent_window = 0;          // --kv-recent-window W (tokens, including the current one)
  Choice<KvEvictPolicy> kv_evict_policy = KvEvictPolicy::Drop;  // --kv-evict-policy drop|merge (merge: evicted
                                                               // blocks fold into summaries)
  Choice<KvSparseSchedule> kv_sparse_schedule = KvSparseSchedule::Uniform;  // --kv-sparse-schedule
                                               // uniform|pyramid|auto: per-layer top-K budgets
                                               // (auto: from the calibration's attention profile; resolved into
                                               // kv_sparse_layer_topk when a model's layout is made; select: into
                                               // per-(layer, KV head) budget scales, KvSelectSpec::head_scale)
  std::vector<int32_t> kv_sparse_layer_topk;   // --kv-sparse-layer-topk k1,k2,..: explicit per-layer budgets
  int32_t kv_evict_during_prefill = 0;  // --kv-evict-during-prefill N (dynamic): every N prompt tokens the last
                                        // recent-window queries score the cache and blocks past the budget go,
                                        // so a sequence holds at most the budget + N tokens; prefill chunks end
                                        // at those points (the same evictions whatever the schedule). 0: the
                                        // prompt is scored whole first (SnapKV)
  int32_t kv_residual_tokens = 0;       // --kv-residual-tokens R: each full-attention layer also keeps its last R
                                        // tokens at --kv-residual-dtype (KIVI's residual window), read there by
                                        // attention and the older rows from the main cache (0: off)
  Choice<KvCacheDtype> kv_residual_dtype = KvCacheDtype::Auto;  // --kv-residual-dtype: the window's dtype (auto =
                                                                // int8)

  // Throws one clear Error per contradiction against the model's per-layer KV specs.
  void validate(const std::vector<KvLayerSpec>& layers) const;
  void validate_residual(const std::vector<KvLayerSpec>& layers) const;  // the residual window's part
  void validate(int32_t num_layers, int32_t head_dim) const;  // a uniform model of that shape
  bool low_rank() const;
  // Two questions, one predicate each. changes_cache: the cache differs from a plain f32 one (another dtype, the
  // rotation, low rank or retention) — what needs the engine's paged cache. changes_bytes: the bytes held differ
  // from a cache of dtype `baseline` (a rotation alone changes none) — what a memory plan compares.
  bool changes_cache() const;
  bool changes_bytes(KvDtype baseline) const;
  bool sparse() const { return enabled && kv_sparse_mode == KvSparseMode::Static; }  // the position-window mask
  bool dynamic() const { return enabled && kv_sparse_mode == KvSparseMode::Dynamic; }
  bool select() const { return enabled && kv_sparse_mode == KvSparseMode::Select; }
  bool select_sketch() const { return select() && kv_select_index == KvSelectIndex::Sketch; }
  bool merge() const { return dynamic() && kv_evict_policy == KvEvictPolicy::Merge; }
  int32_t prefill_evict_tokens() const { return dynamic() ? kv_evict_during_prefill : 0; }
  int32_t sink_tokens() const { return sparse() ? kv_sink_tokens : 0; }
  int32_t window_tokens() const { return sparse() ? kv_recent_window : 0; }
  int32_t rank_k(int32_t layer, int32_t head_dim) const;
  int32_t rank_v(int32_t layer, int32_t head_dim) const;
  KvDtype dtype() const;    // the keys' (and by default the values') storage dtype
  KvDtype v_dtype() const;  // the values'
  bool rotate() const;
  int32_t residual_tokens() const { return enabled ? kv_residual_tokens : 0; }
  KvDtype residual_dtype() const;  // the residual window's dtype
  KvDtype select_dtype() const;    // select's index codes (kv_select_dtype)
  // The per-layer storage and block-table plan for a model: a transform of its specs (dtype, rank, rotation on
  // every layer; static or dynamic retention on the full-attention layers, which keep their own block tables; a
  // residual window appends one stream per full-attention layer after the model's), grouped
  // (KvLayout::assign_groups).
  KvLayout layout(const std::vector<KvLayerSpec>& layers, int32_t block_size) const;
  KvLayout layout(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim, int32_t block_size) const;
  // Dynamic mode: each layer's retention budget in tokens by kv_sparse_schedule (0 for sliding-window layers); the
  // mean over the full-attention layers is kv_sparse_topk.
  std::vector<int32_t> layer_topk(const std::vector<KvLayerSpec>& layers) const;
  void validate_select(const std::vector<KvLayerSpec>& layers) const;
  std::string fingerprint() const;  // goes into the prefix-cache salt
  // Loads a JSON object {"kv_cache_dtype": "int8", ...}; unknown keys are an error that names them.
  static CompressionConfig from_json_file(const std::string& path);
  // The non-default fields as that JSON object (what from_json_file reads back to an equal config).
  std::string to_json(const std::string& description = "") const;
};

// One row per field (compression_fields()): the JSON key (the flag is "--" and the key with dashes), its help, its
// type, and the field's text form both ways — "kv_cache_compression" included (on|off).
struct CompressionField {
  enum class Type : uint8_t { Choice, Int, IntList, Text, OnOff, Number };
  const char* key;
  Type type;
  const char* help;
  std::vector<std::string> choices;                                  // Type::Choice / OnOff: the spellings
  void (*set)(CompressionConfig& c, const std::string& text);        // throws Error naming the flag
  std::string (*get)(const CompressionConfig& c);                    // IntList: comma-separated
  std::string flag() const;                                          // "--kv-cache-dtype"
};
const std::vector<CompressionField>& compression_fields();

// "layer | dtype | rotation | bytes/token | vs f16" lines for the start-up log and the eval report.
std::string describe_plan(const KvLayout& layout);

}  // namespace slimkv
