// Batched causal attention over paged KV (flashinfer-style): plan() once per step from the page table in CSR
// form, run() once per layer. Each query token attends to positions [0, its position] of its own sequence.
// Must not know: requests, the scheduler or how blocks are allocated.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/attention_tile.h"
#include "kernels/dot.h"
#include "kernels/row_select.h"

namespace slimkv {

struct PagedBatchMeta {                // plain data, built once per step
  int32_t block_size = 8;
  std::vector<int32_t> token_seq;      // [T] sequence index of each query token
  std::vector<int32_t> token_pos;      // [T] its position; it attends to [0, pos]
  std::vector<int32_t> kv_indptr;      // [S + 1] offsets into kv_indices
  std::vector<int32_t> kv_indices;     // block ids of every sequence, concatenated
  std::vector<int32_t> kv_last_page_len;  // [S] tokens in each sequence's last page after this step
  // Dynamic retention (else empty): page tables hold live blocks only; a token sees token_ctx[t] rows of them,
  // and tokens with token_track[t] add their attention probabilities to page_importance (per page entry).
  std::vector<int32_t> token_ctx;      // [T]
  std::vector<uint8_t> token_track;    // [T]
  std::vector<int32_t> kv_page_logical;  // [kv_indices.size()] logical block index of each page entry (-1: summary)
  // Merge policy: a sequence's first page may be its summary block; its rows get these score biases
  // (log of the tokens each stands for, -inf for empty rows).
  std::vector<uint8_t> seq_has_summary;  // [S]
  std::vector<float> seq_summary_bias;   // [S * block_size]
  // [S] (or empty) 1: the sequence's queries attend one by one, never in tiles — a speculative verify chunk, whose
  // rows must sum as decode's walk does (greedy output identical to plain decoding)
  std::vector<uint8_t> seq_query_by_query;
};

struct AttentionDims {          // one layer's
  int32_t num_heads = 0, num_kv_heads = 0;
  int32_t head_dim_k = 0;       // query/key head size (q and stored keys before projection)
  int32_t head_dim_v = 0;       // value head size (the output's)
  float scale = 0.0f;           // softmax scale of q·k; 0 = 1/sqrt(head_dim_k)
  const float* sinks = nullptr; // [num_heads] attention sinks: a learned logit per head that joins the softmax's
                                // denominator with no value (gpt-oss; ggml_soft_max_add_sinks), or null
};

// Where a query over num_ctx rows starts reading a residual window of `tokens`: its last `tokens` rows, extended
// back to the start of their block (the window's table holds that block; whole pages keep the kernels' walks).
inline int64_t residual_begin(int64_t num_ctx, int32_t tokens, int32_t block_size) {
  return (num_ctx > tokens ? num_ctx - tokens : 0) / block_size * block_size;
}

// Sequences with at least this many query tokens in a step (a prefill chunk) attend in tiles (attention_tile.h):
// each kv tile decoded once for the tile's tokens and heads. Single tokens (decode) walk query by query. The two
// agree within summation order (float rounding), not bit for bit; each is batch-invariant on its own.
inline constexpr int32_t kMinTileTokens = 2;

// Whether prefill attends in tiles by default: yes, unless the environment sets SLIMKV_PREFILL_TILES=0 (a
// measurement knob: `bench serve` against a server walking prefill query by query, as before tiles; read once).
bool prefill_tiles_default();

class PagedAttention {
 public:
  // Sizes scratch for the step; max_group: the largest GQA group (num_heads / num_kv_heads) of the layers run.
  void plan(const PagedBatchMeta& meta, int32_t max_group, int32_t num_threads);
  // How one layer's rows are stored (kv/kv_storage.h): one plane per KV head, k_head_stride_bytes apart, holding
  // the head's record of k_head_bytes for every slot in slot order (V alike).
  struct LayerKv {
    const uint8_t* k = nullptr;  // the layer's K region in KvStorage
    const uint8_t* v = nullptr;
    int32_t k_dim = 0, v_dim = 0;  // stored values per head (head_dim, or low-rank latent sizes)
    int64_t k_head_bytes = 0, v_head_bytes = 0, k_head_stride_bytes = 0, v_head_stride_bytes = 0;
    KvDtype dtype = KvDtype::F32;    // keys' (and values' unless v_dtype is set)
    bool rotate = false;             // rows were stored after hadamard_rotate: rotate q, un-rotate the output
    const float* k_proj = nullptr;   // low-rank keys: [num_kv_heads, k_dim, head_dim] (latent = P k), or null
    const float* v_proj = nullptr;   // low-rank values: [num_kv_heads, v_dim, head_dim], or null
    int32_t sink_tokens = 0;         // static sparse retention (StreamingLLM): a query at position p sees
    int32_t window_tokens = 0;       // [0, sink_tokens) and its last window_tokens positions; 0 = everything
    int32_t k_split = 0;             // two-part key records (MLA: latent | rope key; kv_record_bytes); 0 = one
    std::optional<KvDtype> v_dtype = std::nullopt;  // values' dtype where it differs from the keys' (asymmetric bits)
    // A residual window (KIVI): the last `tokens` rows a query sees, from the start of their block on, are read
    // from these records (the same heads, sizes and rotation, another dtype) through another group's page table
    // (a window table, which holds that block); the rows before them from the above.
    struct Residual {
      const uint8_t* k = nullptr;
      const uint8_t* v = nullptr;
      int64_t k_head_bytes = 0, v_head_bytes = 0, k_head_stride_bytes = 0, v_head_stride_bytes = 0;
      KvDtype dtype = KvDtype::F32;
      int32_t tokens = 0;
      const PagedBatchMeta* meta = nullptr;  // its group's page tables (the same sequences, in the same order)
    };
    std::optional<Residual> residual = std::nullopt;
    // Per-query sparse attention (select mode, row_select.h): each query's KV head reads its sinks, its recent
    // window (the residual window's rows whole) and the rows between that score highest, up to a budget.
    struct Select {
      RowScorer scorer = RowScorer::Sketch;
      // Sketch: the index stream's int8 records of `rank` values per KV head and token, through its group's tables.
      const uint8_t* index = nullptr;
      int64_t index_head_bytes = 0, index_head_stride_bytes = 0;
      int32_t rank = 0;
      KvDtype index_dtype = KvDtype::Int8;
      bool index_rotate = false;           // the sketches were rotated (hadamard) before quantizing: so is P q
      const float* proj = nullptr;         // [num_kv_heads, rank, head_dim_k] P: a query's sketch is P q
      const PagedBatchMeta* index_meta = nullptr;
      int32_t topk_tokens = 0;             // the budget: tokens a query reads, or
      double fraction = 0;                 // this share of its context (select_budget); with
      double mass = 0;                     // > 0: only the top rows whose estimated softmax mass reaches this share
                                           // (the budget above: the most a query reads)
      const float* head_scale = nullptr;   // [num_kv_heads] the budget's scale per KV head, or null (1)
      int32_t sink_tokens = 0, window_tokens = 0;
    };
    std::optional<Select> select = std::nullopt;
  };
  // What the walks of one run() read (any layer: a dense one reads its whole context). Per (query token, KV head)
  // item: rows read and visible, bytes read (records, the residual window's, the index's) against an f16 cache's.
  struct ReadStats {
    int64_t items = 0;              // (query token, KV head) walks
    double read_fraction_sum = 0;   // sum over items of rows read / rows visible
    int64_t rows_read = 0, rows_visible = 0, index_rows = 0;
    double bytes_read = 0, f16_bytes = 0;
    // With a profiler installed (core/profiler.h): thread-seconds spent choosing rows (scoring the index, the
    // choice) and walking them — the split of the attention's wall time between ProfKind Indexer and Attention.
    double select_seconds = 0, walk_seconds = 0;
    void add(const ReadStats& o) {
      items += o.items, read_fraction_sum += o.read_fraction_sum, rows_read += o.rows_read;
      rows_visible += o.rows_visible, index_rows += o.index_rows, bytes_read += o.bytes_read, f16_bytes += o.f16_bytes;
      select_seconds += o.select_seconds, walk_seconds += o.walk_seconds;
    }
  };
  // q: [T, num_heads * head_dim_k]; out: [T, num_heads * head_dim_v].
  void run(const float* q, const LayerKv& layer, const AttentionDims& dims, float* out, ThreadPool* pool,
           Isa isa = active_isa());
  // Attention probability mass received by each page entry, summed over the layers run since plan(), heads and
  // tracked queries (summed in a fixed order: the result does not depend on threads or batching).
  // Doubles: a block's importance is summed over steps whose query sets depend on the schedule (chunking, batching);
  // in double the grouping's rounding stays far below what the float score used for eviction can show, so every
  // schedule evicts and merges the same blocks with the same weights.
  const std::vector<double>& page_importance() const { return page_importance_; }
  std::vector<double>& page_importance() { return page_importance_; }  // tensor parallelism sums it over ranks
  // A speculative verify chunk's (seq_query_by_query) tracked token t: its own mass per page entry of its sequence
  // ([its pages], summed in page_importance's order over layers and heads), kept apart from page_importance so
  // that only the accepted rows count; nullptr for other tokens.
  const double* row_importance(int32_t t) const {
    return row_importance_at_[t] >= 0 ? row_importance_.data() + row_importance_at_[t] : nullptr;
  }
  std::vector<double>& row_importance() { return row_importance_; }  // tensor parallelism sums it over ranks
  const PagedBatchMeta& meta() const { return *meta_; }  // the step's page tables (after plan())
  const ReadStats& last_read() const { return last_read_; }  // of the last run()
  // Prefill chunks in tiles (the default) or query by query as decode steps go; min_tokens: the shortest run of a
  // sequence's tokens that attends in tiles (1: decode steps too). `bench attention` compares them.
  void set_tiled(bool on, int32_t min_tokens = kMinTileTokens) { tiled_ = on, min_tile_tokens_ = min_tokens; }

 private:
  const PagedBatchMeta* meta_ = nullptr;
  int64_t ctx_sum_ = 0;        // visible rows summed over the tokens (work = ctx_sum * heads * head dim)
  int32_t max_ctx_ = 0;
  int32_t max_chunk_ = 1;      // query heads per kernel call at most: min(max GQA group, kMaxAttendGroup)
  std::vector<float> scores_;  // [num_threads, chunk_heads, max_ctx]
  std::vector<float> qbuf_, latbuf_;  // [num_threads, chunk_heads, 1024] queries / outputs in the stored basis
  std::vector<float> recent_out_;     // [num_threads, chunk_heads, 1024] the residual window's part of the outputs
  std::vector<float> probs_;   // [T * num_heads, max_ctx] tracked queries' probabilities (dynamic retention)
  std::vector<double> page_importance_;
  std::vector<double> row_importance_;      // [verify chunks' tracked rows, their sequence's pages]
  std::vector<int64_t> row_importance_at_;  // [T] where token t's pages start in row_importance_, or -1
  std::vector<int32_t> sel_rows_;     // [num_threads, 2, max_ctx] select mode: rows read, pick_rows' scratch
  std::vector<float> sel_scores_;     // [num_threads, max_ctx] the index's scores
  std::vector<float> sel_qlat_;       // [num_threads, chunk, 256] the queries' sketches
  std::vector<ReadStats> thread_read_;  // [num_threads]
  ReadStats last_read_;
  // Tiled prefill (paged_attention_tiles.cpp): this run's tiles of consecutive tokens of one sequence, and the
  // tokens walked one by one.
  struct TokenTile {
    int32_t t0 = 0, tokens = 0;  // query tokens [t0, t0 + tokens) of the batch
  };
  bool tiled_ = prefill_tiles_default();
  int32_t min_tile_tokens_ = kMinTileTokens;
  std::vector<TokenTile> tiles_;
  std::vector<int32_t> single_tokens_;  // the other tokens, in batch order
  std::vector<float> tile_buf_;         // [num_threads, tile_floats_] per thread: queries, state, kernel scratch
  int64_t tile_floats_ = 0;
  // One KV head's rows of sequence seq in layer's K / V planes, through m's page table (kv/kv_storage.h).
  static PagedKv head_kv(const LayerKv& layer, int32_t kvh, const PagedBatchMeta& m, int32_t seq);
  // The same head's rows from position `older` (a block boundary) on, in the layer's residual window records.
  static PagedKv residual_view(const PagedKv& main, const LayerKv::Residual& r, int32_t kv_head, int32_t seq,
                               int64_t older);
  // Splits the step's tokens into tiles (where the layer allows tiles) and single tokens; sizes the scratch.
  void plan_tiles(const LayerKv& layer, const AttentionDims& dims, bool tiles_on, int32_t tile_tokens,
                  int32_t num_threads);
  // One tile item: tile `tile`, query heads [h0, h0 + num_q) of KV head kvh; writes their rows of out.
  void run_tile(int64_t tile, int32_t kvh, int32_t h0, int32_t num_q, const float* q, const LayerKv& layer,
                const AttentionDims& dims, const DotKernels& k, float scale, float* out, int32_t thread);
};

}  // namespace slimkv
