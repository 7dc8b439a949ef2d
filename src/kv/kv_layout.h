// Geometry of the paged KV cache (vLLM's KVCacheSpec idea): per layer, what attention needs (heads, K and V head
// sizes, a sliding window) and how one token's rows are stored (dtype, low-rank sizes, rotation); layers whose
// block tables behave alike (the same KvGroupSpec: full attention, a window, a retention budget, compressed
// entries, a recurrent state) form groups, each with its own block table per sequence, over one block pool per
// record size. A block id of group g holds, for each of g's layers, that layer's rows in the storage tensor of its
// slot; groups have at most `layers_per_group` layers, so one block costs the same bytes whichever group uses it.
// Must not know: which request owns a block, or how attention reads it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace slimkv {

// What a stream of records is for (DeepSeek-V4 keeps several streams per layer): attention keys/values, the
// lightning indexer's keys (stored F16 by default, as llama.cpp does), or a compressor's exact per-token state
// (always F32: compression configs leave it alone), or a residual window: the last tokens of an attention stream
// again, at a wider dtype (KIVI's full-precision residual; compression_config.h), in a windowed table of its own, or
// a select index: a small key per token (a calibrated low-rank sketch of the post-RoPE key) that per-query sparse
// attention scores to choose which rows of its layer a query reads (kv_sparse_mode select; compression_config.h).
// Residual and SelectIndex streams are appended by a compression config after the model's own.
enum class KvRecordKind : uint8_t { Attention, IndexKeys, State, Residual, SelectIndex };

// What a model's layer (or one of its cache streams) needs from the cache.
struct KvLayerSpec {
  int32_t num_kv_heads = 0;
  int32_t head_dim_k = 0, head_dim_v = 0;
  int32_t window_tokens = 0;  // sliding-window attention: a query at p sees p0 with p - p0 < window; 0 = full
  bool v_in_k = false;        // the value is the first head_dim_v values of the key record (MLA's latent cache:
                              // one record of [latent | rope key] per token, no separate V)
  int32_t entry_tokens = 0;   // > 1: a compressed stream, one record per this many tokens (DeepSeek-V4's CSA / HCA
                              // entries and indexer keys); its block table counts entries, not tokens
  KvRecordKind kind = KvRecordKind::Attention;
  int64_t state_floats = 0;   // > 0: a recurrent state of this many F32 values per sequence, not per token (kind
                              // State; linear-attention layers): one block of a Recurrent group holds it,
                              // spread over the block's records
};

// The kinds of block table (kv_group_table.h: one class each, what the cache manager dispatches on).
enum class KvGroupKind : uint8_t {
  FullAttention,  // every token's record, all kept
  Window,         // a sliding window (a model's, or static retention's, with sinks): blocks behind it are freed
  DynamicTopK,    // dynamic retention: sinks + recent window + the most attended blocks up to a budget
  Entries,        // compressed entries, one record per entry_tokens tokens (natively compressed streams)
  Recurrent,      // one fixed-size state per sequence (linear-attention layers), updated in place: one block
};

// How a group's block table keeps blocks (a compression config may turn full-attention specs into these). Made by
// the factories below: the kind is explicit, and each kind's fields are its own.
struct KvGroupSpec {
  KvGroupKind kind = KvGroupKind::FullAttention;
  int32_t window_tokens = 0;      // Window: attention sees [0, sink_tokens) and its last window_tokens positions;
  int32_t sink_tokens = 0;        // blocks wholly between are freed (sliding window: sinks 0; static retention: S)
  int32_t dyn_topk_tokens = 0;    // DynamicTopK: keep sinks + recent window + the most attended blocks up to
  int32_t dyn_sink_tokens = 0;    // this many tokens
  int32_t dyn_window_tokens = 0;
  bool dyn_merge = false;         // evicted blocks fold into a summary block
  int32_t dyn_prefill_evict_tokens = 0;  // > 0: also evicts each time this many prompt tokens are computed (else
                                         // only once the whole prompt is)
  int32_t entry_tokens = 0;       // Entries: blocks hold entries of this many tokens each (entry e of a sequence
                                  // is complete once token (e + 1) * entry_tokens - 1 is computed)
  int32_t pool = 0;               // the block pool its blocks come from (KvLayout: one per record size when the
                                  // layout mixes record sizes, as natively compressed streams do; else 0)
  static KvGroupSpec full() { return {}; }
  static KvGroupSpec window(int32_t window_tokens, int32_t sink_tokens = 0);
  static KvGroupSpec dynamic_topk(int32_t topk_tokens, int32_t sink_tokens, int32_t window_tokens, bool merge,
                                  int32_t prefill_evict_tokens = 0);
  static KvGroupSpec entries(int32_t entry_tokens);
  static KvGroupSpec recurrent();
  bool windowed() const { return kind == KvGroupKind::Window; }
  bool compressed() const { return kind == KvGroupKind::Entries; }
  bool dynamic() const { return kind == KvGroupKind::DynamicTopK; }
  // Evictions within a prompt every this many tokens (0: none before the prompt is computed).
  int32_t prefill_evict_every() const { return dynamic() ? dyn_prefill_evict_tokens : 0; }
  bool recurrent_state() const { return kind == KvGroupKind::Recurrent; }
  // Records a sequence of num_tokens computed tokens holds in this table (complete entries only; a recurrent state
  // counts as one record: its one block).
  int64_t records_for_tokens(int64_t num_tokens) const {
    if (recurrent_state()) return num_tokens > 0 ? 1 : 0;
    return compressed() ? num_tokens / entry_tokens : num_tokens;
  }
  bool operator==(const KvGroupSpec&) const = default;
  std::string describe() const;
};

// Per-query sparse attention on a layer (select mode: compression_config.h): what scores its rows and how many a
// query reads. Attention-time only: the layer keeps every row, in its own block table as before.
enum class KvSelectScorer : uint8_t { None, Sketch, Oracle, Pages };
struct KvSelectSpec {
  KvSelectScorer scorer = KvSelectScorer::None;
  int32_t topk_tokens = 0;   // rows a query reads in all (sinks and window included), or
  double fraction = 0;       // this share of its context (> 0 wins)
  double mass = 0;           // > 0: adaptive — the top rows holding this share of the estimated mass, at most the above
  int32_t sink_tokens = 0, window_tokens = 0;
  // Per KV head (this rank's): the budget above times head_scale[h] (--kv-sparse-schedule auto: the calibration's
  // per-head read profile; mean 1 over the model's heads). Empty: every head the same.
  std::vector<float> head_scale;
  bool on() const { return scorer != KvSelectScorer::None; }
  bool operator==(const KvSelectSpec&) const = default;
};

struct KvLayerGeometry {
  int32_t num_kv_heads = 0;
  int32_t head_dim_k = 0, head_dim_v = 0;  // the model's
  int32_t k_dim = 0;         // values stored per head and token for keys: head_dim_k, or a low-rank latent size
  int32_t v_dim = 0;         // ... for values
  KvDtype dtype = KvDtype::F32;    // keys' storage dtype (and the values' unless v_dtype differs)
  KvDtype v_dtype = KvDtype::F32;  // values' storage dtype (asymmetric bits: keys 8 / values 4, ...)
  bool rotate = false;       // rows stored after a fixed randomized Hadamard rotation per head
  bool v_in_k = false;       // no V rows: the value is the first v_dim values of the K record (KvLayerSpec)
  KvRecordKind kind = KvRecordKind::Attention;
  KvGroupSpec spec;          // how its block table behaves (spec.pool: its block pool)
  int32_t group = 0;         // set by KvLayout::assign_groups
  int32_t tensor = 0;        // storage tensor (KvStorage region) its rows live in
  // Streams a compression config appended for this layer (compress/stream_kinds.h: its residual window, its select
  // index), each of its own record kind; KvLayout::appended_stream finds one by kind.
  std::vector<int32_t> appended_streams;
  int32_t residual_tokens = 0;   // a residual window: attention reads this layer's last residual_tokens rows there
  KvSelectSpec select;           // per-query sparse attention on this layer (scorer None: dense)
  int32_t source_layer = -1;     // appended streams (Residual, SelectIndex): the layer whose rows they derive from
  bool appended() const { return source_layer >= 0; }
  // MLA records are two parts, scaled (and rotated) on their own: the latent (the value) and the rope key.
  int32_t k_split() const { return v_in_k && v_dim < k_dim ? v_dim : 0; }
  int64_t k_head_bytes() const { return kv_record_bytes(dtype, k_dim, k_split()); }
  int64_t v_head_bytes() const { return v_in_k ? 0 : kv_head_record_bytes(v_dtype, v_dim); }  // stored V bytes
  KvDtype record_dtype(int which) const { return which == 0 ? dtype : v_dtype; }  // 0: keys, 1: values
  int64_t k_row_bytes() const { return k_head_bytes() * num_kv_heads; }  // one token's keys, all KV heads
  int64_t v_row_bytes() const { return v_head_bytes() * num_kv_heads; }
  int64_t bytes_per_token() const { return k_row_bytes() + v_row_bytes(); }
  bool low_rank() const { return k_dim != head_dim_k || v_dim != head_dim_v; }
  bool is_plain_f32() const { return dtype == KvDtype::F32 && v_dtype == KvDtype::F32 && !rotate && !low_rank(); }
  bool same_record(const KvLayerGeometry& o) const {
    return num_kv_heads == o.num_kv_heads && k_head_bytes() == o.k_head_bytes() && v_head_bytes() == o.v_head_bytes() &&
           v_in_k == o.v_in_k;
  }
};

struct KvGroup {
  KvGroupSpec spec;
  std::vector<int32_t> layers;  // model layer indices, in order
};

struct KvLayout {
  int32_t block_size_tokens = 8;
  std::vector<KvLayerGeometry> layers;  // [num_layers]
  std::vector<KvGroup> groups;          // set by assign_groups
  std::vector<int32_t> tensor_layer;    // [num_tensors] a layer whose geometry the tensor has
  std::vector<int32_t> tensor_pool;     // [num_tensors] the pool whose block ids index it
  // Speculative decoding: the spare blocks a recurrent-state group holds per sequence during a verify chunk (its
  // drafts' states, KvCacheManager::allocate_draft_states); counted by blocks_for_sequence. Set by the engine.
  int32_t draft_state_blocks = 0;

  // Every layer stores full K and V rows in `dtype`, full attention, one group.
  static KvLayout uniform(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim, int32_t block_size_tokens,
                          KvDtype dtype = KvDtype::F32, bool rotate = false);
  // Full-precision rows for these per-layer specs (sliding windows become windowed group specs), grouped.
  static KvLayout from_specs(const std::vector<KvLayerSpec>& specs, int32_t block_size_tokens);
  // Groups layers by spec (vLLM's rule: groups of at most min(count per spec) layers, in layer order) and assigns
  // storage tensors: slot j of every group shares tensor j when the record geometry agrees (else its own tensor).
  // A block id reserves a record in every tensor of its pool, so a layout whose streams have different record sizes
  // (DeepSeek-V4: raw window, entries, indexer keys, compressor state) gets one block pool per record size (the
  // size is part of the group spec); every other layout has one pool, as before.
  void assign_groups();

  int32_t num_layers() const { return static_cast<int32_t>(layers.size()); }
  // The stream of record kind `kind` appended for layer l, or -1.
  int32_t appended_stream(int32_t l, KvRecordKind kind) const {
    for (int32_t s : layers[l].appended_streams) {
      if (layers[s].kind == kind) return s;
    }
    return -1;
  }
  // The model's own streams: every layer but the residual windows a compression config appends after them.
  int32_t num_model_streams() const;
  int32_t num_groups() const { return static_cast<int32_t>(groups.size()); }
  int32_t num_tensors() const { return static_cast<int32_t>(tensor_layer.size()); }
  int32_t num_pools() const;
  int32_t group_pool(int32_t g) const { return groups[g].spec.pool; }
  int64_t bytes_per_token() const;  // summed over layers: what one token costs when every group holds it
  int64_t bytes_per_block() const;  // one block id's bytes, summed over the storage tensors (of every pool)
  int64_t bytes_per_block(int32_t pool) const;  // ... of one pool's tensors
  int32_t blocks_for_tokens(int64_t num_tokens) const {
    return static_cast<int32_t>((num_tokens + block_size_tokens - 1) / block_size_tokens);
  }
  // Blocks one sequence of num_tokens holds at most (over all groups), computed in chunks of chunk_tokens: a
  // windowed group never holds more than its window plus a chunk.
  int64_t blocks_for_sequence(int64_t num_tokens, int64_t chunk_tokens) const;
  int64_t blocks_for_sequence(int64_t num_tokens, int64_t chunk_tokens, int32_t pool) const;  // one pool's groups
  // Blocks group g's table holds for one sequence of num_tokens (single-sequence tools' identity tables).
  int32_t group_blocks_for_tokens(int32_t g, int64_t num_tokens) const;
  // Per pool: the blocks of one sequence of num_tokens in each of its groups, side by side (at least one).
  std::vector<int32_t> pool_blocks_for_tokens(int64_t num_tokens) const;
  // Blocks (summed over groups) a sequence holds after num_tokens, once behind-window blocks are freed.
  int64_t blocks_held_after(int64_t num_tokens) const;
  bool uniform_full() const { return groups.size() == 1 && groups[0].spec == KvGroupSpec{}; }
};

// The groups' specs, in order (what KvCacheManager takes).
std::vector<KvGroupSpec> group_specs(const KvLayout& layout);

}  // namespace slimkv
