#include "kernels/ops.h"
#include "model/decoder_forward.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/profiler.h"
#include "kernels/index_page.h"
#include "kernels/kv_codec.h"
#include "model/kv_projection.h"
#include "model/lora_ops.h"

namespace slimkv {

DecoderForward::DecoderForward(const Model& model, ThreadPool* pool, std::unique_ptr<BackendOps> ops)
    : model_(model), family_(family_by_name(model.config.family)), pool_(pool),
      ops_(std::make_unique<LoraOps>(ops ? std::move(ops) : make_cpu_ops(pool, model.collectives.get()))),
      num_streams_(static_cast<int32_t>(kv_layer_specs(model.config).size())) {
  lora_ops_ = static_cast<LoraOps*>(ops_.get());  // made so just above
  const ModelConfig& c = model.config;
  SLIMKV_CHECK(static_cast<int32_t>(c.layers.size()) == c.num_layers && !model.layers.empty(),
               "forward: model config has no per-layer values (finalize() not called)");
  for (const LayerConfig& l : c.layers) {  // one table per distinct RoPE configuration
    int32_t idx = -1;
    for (size_t i = 0; i < ropes_.size(); ++i) {
      if (ropes_[i].config == l.rope && ropes_[i].rotary_dim == l.rotary_dim && ropes_[i].head_dim == l.head_dim_k) {
        idx = static_cast<int32_t>(i);
      }
    }
    if (idx < 0) {
      ropes_.emplace_back();
      ropes_.back().init(c.max_seq_len, l.head_dim_k, l.rotary_dim, l.rope, c.rope_layout);
      idx = static_cast<int32_t>(ropes_.size()) - 1;
    }
    layer_rope_.push_back(idx);
  }
  reserve(1, 1);
}

KvLayout DecoderForward::kv_layout(int32_t block_size_tokens, const CompressionConfig& cc) const {
  return model_kv_layout(model_, block_size_tokens, cc);
}

void DecoderForward::write_kv(KvStorage& kv, int32_t l, int64_t slot, const float* k_row, const float* v_row) {
  const KvLayerGeometry& g = kv.layout().layers[l];
  if (g.is_plain_f32()) {  // the uncompressed cache: plain copies (bit-identical to no compression at all)
    for (int32_t h = 0; h < g.num_kv_heads; ++h) {
      std::memcpy(kv.k_head(l, slot, h), k_row + static_cast<size_t>(h) * g.head_dim_k, sizeof(float) * g.head_dim_k);
      if (g.v_in_k) continue;
      std::memcpy(kv.v_head(l, slot, h), v_row + static_cast<size_t>(h) * g.head_dim_v, sizeof(float) * g.head_dim_v);
    }
    return;
  }
  head_.resize(std::max(g.head_dim_k, g.head_dim_v));
  const LayerProjection* lp = kv_proj_.empty() ? nullptr : &kv_proj_[l];
  for (int32_t h = 0; h < g.num_kv_heads; ++h) {
    for (int which = 0; which < (g.v_in_k ? 1 : 2); ++which) {  // a latent cache stores only its key record
      const int32_t hd = which == 0 ? g.head_dim_k : g.head_dim_v;
      const float* src = (which == 0 ? k_row : v_row) + static_cast<size_t>(h) * hd;
      const int32_t dim = which == 0 ? g.k_dim : g.v_dim;
      const std::vector<float>* basis = lp ? (which == 0 ? &lp->k : &lp->v) : nullptr;
      if (basis && !basis->empty()) {  // latent = P x, P: [dim, head_dim] for this head
        const float* p = basis->data() + static_cast<size_t>(h) * dim * hd;
        for (int32_t r = 0; r < dim; ++r) {
          float acc = 0;
          for (int32_t j = 0; j < hd; ++j) acc += p[static_cast<size_t>(r) * hd + j] * src[j];
          head_[r] = acc;
        }
      } else {
        std::copy(src, src + hd, head_.begin());
      }
      const int32_t split = which == 0 ? g.k_split() : 0;  // two-part records: each part scaled (rotated) apart
      if (g.rotate) hadamard_rotate_record(head_.data(), dim, split);
      if (g.kind == KvRecordKind::SelectIndex) {  // a select index's pages hold their records by columns
        const int32_t bs = kv.layout().block_size_tokens, row = static_cast<int32_t>(slot % bs);
        record_.resize(static_cast<size_t>(g.k_head_bytes()));
        encode_kv_record(head_.data(), dim, split, g.dtype, record_.data());
        store_index_record(kv.k_head(l, slot - row, h), bs, g.k_head_bytes(), row, record_.data());
        continue;
      }
      uint8_t* dst = which == 0 ? kv.k_head(l, slot, h) : kv.v_head(l, slot, h);
      encode_kv_record(head_.data(), dim, split, g.record_dtype(which), dst);
    }
  }
}

void DecoderForward::reserve(int32_t T, int32_t rows) {
  const ModelConfig& c = model_.config;
  if (T > capacity_) {
    capacity_ = T;
    const size_t t = T;
    x_.resize(t * c.dim);
    xb_.resize(t * c.dim);
    q_.resize(t * c.max_q_dim());
    k_.resize(t * c.max_kv_dim());
    v_.resize(t * c.max_kv_dim());
    att_.resize(t * c.max_q_dim());
    for (const LayerConfig& l : c.layers) {
      if (l.attn_output_gate) qgate_.resize(t * c.max_q_dim());
    }
    proj_.resize(t * c.dim);
    hb_.resize(t * c.max_ffn_dim());
    hb2_.resize(t * c.max_ffn_dim());
    if (c.moe.num_experts > 0) {
      router_.resize(t * c.moe.num_experts);
      sel_.resize(t * c.moe.num_experts_used);
      selw_.resize(t * c.moe.num_experts_used);
      ein_.resize(t * c.dim);
      eout_.resize(t * c.dim);
      etok_.resize(t);
      ewt_.resize(t);
    }
  }
  if (rows > logits_capacity_) {
    logits_capacity_ = rows;
    final_.resize(static_cast<size_t>(rows) * c.dim);
  }
}

PagedAttention& DecoderForward::attention_plan(int32_t g) {
  if (!planned_[g]) {
    const ModelConfig& c = model_.config;
    int32_t max_group = 1;
    for (int32_t l : kv_->layout().groups[g].layers) {  // (residual windows: streams past the model's layers,
      if (l >= c.num_layers) continue;                    // read through their layer's plan)
      max_group = std::max(max_group, c.layers[l].num_heads / c.layers[l].num_kv_heads);
    }
    attention_[g].plan(batch_->attn[g], max_group, pool_ ? pool_->num_threads() : 1);
    planned_[g] = 1;
  }
  return attention_[g];
}

void DecoderForward::norm(float* out, const float* in, const float* w) {
  const int32_t dim = model_.config.dim;
  ops_->rmsnorm_rows(out, in, w, T_, dim, model_.config.rms_eps);
}

void DecoderForward::add_to_residual(const float* y) {
  const size_t n = static_cast<size_t>(T_) * model_.config.dim;
  for (size_t i = 0; i < n; ++i) x_[i] += y[i];
}

// Every array of the batch against the cache's layout, the vocabulary and the context: one clear Error each.
void DecoderForward::check_batch(const ForwardBatch& b, const KvStorage& kv) const {
  const ModelConfig& c = model_.config;
  const int32_t T = b.num_tokens();
  const KvLayout& layout = kv.layout();
  SLIMKV_CHECK(T > 0, "forward: empty batch");
  SLIMKV_CHECK(b.num_groups() == layout.num_groups(), "forward: batch has {} page tables for {} KV groups",
               b.num_groups(), layout.num_groups());
  SLIMKV_CHECK(layout.num_model_streams() == num_streams_, "forward: KV layout has {} layers (streams), the model {}",
               layout.num_model_streams(), num_streams_);
  SLIMKV_CHECK(b.positions.size() == static_cast<size_t>(T), "forward: batch arrays differ in length");
  for (int32_t g = 0; g < b.num_groups(); ++g) {
    const int64_t num_slots = static_cast<int64_t>(kv.num_blocks(layout.group_pool(g))) * layout.block_size_tokens;
    SLIMKV_CHECK(b.slots[g].size() == static_cast<size_t>(T), "forward: batch arrays differ in length");
    const bool entries = layout.groups[g].spec.compressed();  // -1: this token completes no entry
    for (int64_t s : b.slots[g]) {
      SLIMKV_CHECK((s >= 0 || (entries && s == -1)) && s < num_slots, "forward: KV slot {} out of range", s);
    }
  }
  for (int32_t g = 0; g < static_cast<int32_t>(b.states.size()) && g < b.num_groups(); ++g) {
    const int32_t blocks = kv.num_blocks(layout.group_pool(g));  // recurrent states' blocks in their pool
    auto ok = [&](int32_t id, bool may_be_none) { return (may_be_none && id == -1) || (id >= 0 && id < blocks); };
    for (const StateSlots& s : b.states[g]) {
      SLIMKV_CHECK(ok(s.in_block, true) && ok(s.out_block, false) && ok(s.snapshot_block, true),
                   "forward: state blocks {} / {} / {} out of range ({} blocks)", s.in_block, s.out_block,
                   s.snapshot_block, blocks);
      SLIMKV_CHECK(s.draft_first >= 0 && s.num_draft_states >= 0 &&
                       static_cast<size_t>(s.draft_first) + s.num_draft_states <= b.draft_state_blocks.size(),
                   "forward: draft states {}+{} of {}", s.draft_first, s.num_draft_states, b.draft_state_blocks.size());
      for (int32_t j = 0; j < s.num_draft_states; ++j) {
        SLIMKV_CHECK(ok(b.draft_state_blocks[s.draft_first + j], false), "forward: draft state block {} out of "
                     "range ({} blocks)", b.draft_state_blocks[s.draft_first + j], blocks);
      }
    }
  }
  for (int32_t t = 0; t < T; ++t) {
    SLIMKV_CHECK(b.token_ids[t] >= 0 && b.token_ids[t] < c.vocab_size,
                 "token id {} is outside the vocabulary (0..{})", b.token_ids[t], c.vocab_size - 1);
    SLIMKV_CHECK(b.positions[t] >= 0 && b.positions[t] < c.max_seq_len,
                 "position {} exceeds the model context ({} tokens)", b.positions[t], c.max_seq_len);
  }
}

// The step's LoRA rows (lora_ops.h): each token's adapter, and each logits row's (its token's).
void DecoderForward::begin_lora_step(const ForwardBatch& b) {
  const int32_t T = b.num_tokens();
  if (b.token_lora.empty()) return lora_ops_->clear_step();
  SLIMKV_CHECK(b.token_lora.size() == static_cast<size_t>(T), "forward: {} LoRA entries for {} tokens",
               b.token_lora.size(), T);
  for (int32_t a : b.token_lora) {
    SLIMKV_CHECK(a >= -1 && a < static_cast<int32_t>(step_loras_.size()), "forward: LoRA index {} of {}", a,
                 step_loras_.size());
  }
  row_lora_.clear();
  for (int32_t t : b.logits_rows) row_lora_.push_back(t >= 0 && t < T ? b.token_lora[t] : -1);
  lora_ops_->set_step(&step_loras_, b.token_lora.data(), T, row_lora_.data(), static_cast<int64_t>(row_lora_.size()));
}

// An MTP head's input: x[t] = eh_proj([enorm(embed(token t)) | hnorm(input_hidden[t])]) (x holds the embeddings).
void DecoderForward::mtp_input_rows(const ForwardBatch& b) {
  const MtpHeadWeights& h = *model_.mtp_input;
  const int32_t dim = model_.config.dim, T = b.num_tokens();
  const float eps = model_.config.rms_eps;
  SLIMKV_CHECK(b.input_hidden.size() == static_cast<size_t>(T) * dim,
               "forward: an MTP head needs each token's hidden state ({} floats for {} tokens, got {})",
               static_cast<size_t>(T) * dim, T, b.input_hidden.size());
  mtp_in_.resize(static_cast<size_t>(T) * 2 * dim);
  for (int32_t t = 0; t < T; ++t) {
    float* row = mtp_in_.data() + static_cast<size_t>(t) * 2 * dim;
    rmsnorm(row, x_.data() + static_cast<size_t>(t) * dim, h.enorm, dim, eps);
    rmsnorm(row + dim, b.input_hidden.data() + static_cast<size_t>(t) * dim, h.hnorm, dim, eps);
  }
  ProfScope ps(ProfKind::Matmul);
  ops_->matmul(h.eh_proj, mtp_in_.data(), T, x_.data());
}

// The final hidden states the batch asked to keep (embeddings), after the final norm.
void DecoderForward::keep_hidden_rows(const ForwardBatch& b) {
  const int32_t dim = model_.config.dim, T = b.num_tokens();
  hidden_.resize(b.hidden_rows.size() * static_cast<size_t>(dim));
  for (size_t r = 0; r < b.hidden_rows.size(); ++r) {
    const int32_t t = b.hidden_rows[r];
    SLIMKV_CHECK(t >= 0 && t < T, "forward: hidden row {} outside the batch", t);
    rmsnorm(hidden_.data() + r * dim, x_.data() + static_cast<size_t>(t) * dim, model_.final_norm, dim,
            model_.config.rms_eps);
  }
}

void DecoderForward::forward(const ForwardBatch& b, KvStorage& kv, float* logits_out) {
  const ModelConfig& c = model_.config;
  const int32_t T = b.num_tokens();
  const KvLayout& layout = kv.layout();
  check_batch(b, kv);
  reserve(T, static_cast<int32_t>(b.logits_rows.size()));
  const int32_t max_pos = *std::max_element(b.positions.begin(), b.positions.end());
  for (RopeTable& r : ropes_) r.ensure(max_pos + 1);
  batch_ = &b;
  kv_ = &kv;
  T_ = T;
  if (attention_.size() != static_cast<size_t>(layout.num_groups())) attention_.resize(layout.num_groups());
  planned_.assign(layout.num_groups(), 0);  // planned on first use (a block that reads its streams itself never asks)
  const int32_t dim = c.dim;
  for (int32_t t = 0; t < T; ++t) {
    float* row = x_.data() + static_cast<size_t>(t) * dim;
    dequantize_row(model_.tok_embd, b.token_ids[t], row);
    if (c.embed_scale != 1.0f) {
      for (int32_t i = 0; i < dim; ++i) row[i] *= c.embed_scale;
    }
  }
  if (model_.mtp_input) mtp_input_rows(b);
  begin_lora_step(b);  // the step's adapters, or the base weights alone
  struct EndStep {     // on every way out: no adapter outside a forward
    LoraOps& ops;
    ~EndStep() { ops.clear_step(); }
  } end_step{*lora_ops_};
  for (int32_t l = 0; l < c.num_layers; ++l) family_.layer(*this, l);
  sum_importance_over_ranks(b);
  batch_ = nullptr;
  kv_ = nullptr;
  keep_hidden_rows(b);
  const int32_t rows = static_cast<int32_t>(b.logits_rows.size());
  if (rows == 0) return;
  for (int32_t r = 0; r < rows; ++r) {
    const int32_t t = b.logits_rows[r];
    SLIMKV_CHECK(t >= 0 && t < T, "forward: logits row {} outside the batch", t);
    rmsnorm(final_.data() + static_cast<size_t>(r) * dim, x_.data() + static_cast<size_t>(t) * dim, model_.final_norm,
            dim, c.rms_eps);
  }
  if (model_.shard.vocab_split && b.logits_candidates > 0) {
    vocab_parallel_candidates(rows, b.logits_candidates, logits_out);  // soft-capped there: the rest stays -inf
    return;
  }
  if (model_.shard.vocab_split) {
    vocab_parallel_logits(rows, logits_out);
  } else {
    ProfScope ps(ProfKind::Matmul);
    ops_->matmul(model_.output, final_.data(), rows, logits_out);
  }
  if (c.final_logit_softcap > 0) softcap(logits_out, static_cast<int64_t>(rows) * c.vocab_size, c.final_logit_softcap);
}

// Tensor parallelism: each rank's attention saw only its heads, so the attention mass per page that dynamic
// retention reads is summed over the ranks (in double, as it is accumulated) — every rank, and rank 0's scheduler,
// then holds one process's figure up to summation order and evicts alike.
void DecoderForward::sum_importance_over_ranks(const ForwardBatch& b) {
  if (ops_->num_ranks() == 1) return;
  for (int32_t g = 0; g < b.num_groups(); ++g) {
    const auto& track = b.attn[g].token_track;
    if (!planned_[g] || std::find(track.begin(), track.end(), uint8_t{1}) == track.end()) continue;  // alike on every rank
    for (std::vector<double>* imp : {&attention_[g].page_importance(), &attention_[g].row_importance()}) {
      if (!imp->empty()) ops_->all_reduce_sum(imp->data(), static_cast<int64_t>(imp->size()));
    }
  }
}

// Tensor parallelism with a vocabulary-parallel head: this rank's [rows, vocab / ranks] columns, all-gathered
// ([ranks, rows, vocab / ranks]) and laid out as [rows, vocab].
void DecoderForward::vocab_parallel_logits(int32_t rows, float* logits_out) {
  const int64_t slice = model_.output.rows, ranks = model_.shard.ranks;
  head_local_.resize(static_cast<size_t>(rows) * slice);
  head_all_.resize(static_cast<size_t>(rows) * slice * ranks);
  {
    ProfScope ps(ProfKind::Matmul);
    ops_->matmul(model_.output, final_.data(), rows, head_local_.data());
  }
  ops_->all_gather(head_local_.data(), static_cast<int64_t>(rows) * slice, head_all_.data());
  for (int64_t k = 0; k < ranks; ++k) {
    for (int32_t r = 0; r < rows; ++r) {
      std::copy_n(head_all_.data() + (k * rows + r) * slice, slice, logits_out + r * slice * ranks + k * slice);
    }
  }
}

// Tensor parallelism, a step that reads only each row's top k logits: every rank picks its slice's top k per row
// (by logit, then the lower id), an all-gather exchanges those (value, id) pairs ([ranks, rows, k, 2]), and every
// rank keeps the best k of them: the row holds those logits, the rest -inf. The same k logits, bit for bit, as the
// whole-row path, so greedy and top-k sampling pick the same tokens.
void DecoderForward::vocab_parallel_candidates(int32_t rows, int32_t k, float* logits_out) {
  const ModelConfig& c = model_.config;
  const int64_t slice = model_.output.rows, ranks = model_.shard.ranks, first_id = model_.shard.rank * slice;
  k = static_cast<int32_t>(std::min<int64_t>(k, slice));
  head_local_.resize(static_cast<size_t>(rows) * slice);
  {
    ProfScope ps(ProfKind::Matmul);
    ops_->matmul(model_.output, final_.data(), rows, head_local_.data());
  }
  auto better = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  std::vector<std::pair<float, int32_t>>& cand = head_cand_;
  cand.resize(static_cast<size_t>(std::max<int64_t>(slice, ranks * k)));
  std::vector<float>& mine = head_mine_;
  mine.resize(static_cast<size_t>(rows) * k * 2);
  for (int32_t r = 0; r < rows; ++r) {
    const float* row = head_local_.data() + static_cast<size_t>(r) * slice;
    for (int64_t i = 0; i < slice; ++i) cand[i] = {row[i], static_cast<int32_t>(first_id + i)};
    std::partial_sort(cand.begin(), cand.begin() + k, cand.begin() + slice, better);
    for (int32_t j = 0; j < k; ++j) {  // ids below 2^24 are exact in a float
      mine[(static_cast<size_t>(r) * k + j) * 2] = cand[j].first;
      mine[(static_cast<size_t>(r) * k + j) * 2 + 1] = static_cast<float>(cand[j].second);
    }
  }
  head_all_.resize(static_cast<size_t>(ranks) * mine.size());
  ops_->all_gather(mine.data(), static_cast<int64_t>(mine.size()), head_all_.data());
  std::fill(logits_out, logits_out + static_cast<size_t>(rows) * c.vocab_size, -INFINITY);
  for (int32_t r = 0; r < rows; ++r) {
    size_t n = 0;
    for (int64_t q = 0; q < ranks; ++q) {
      const float* p = head_all_.data() + (static_cast<size_t>(q * rows + r) * k) * 2;
      for (int32_t j = 0; j < k; ++j) cand[n++] = {p[2 * j], static_cast<int32_t>(p[2 * j + 1])};
    }
    std::partial_sort(cand.begin(), cand.begin() + k, cand.begin() + n, better);
    float* out = logits_out + static_cast<size_t>(r) * c.vocab_size;
    for (int32_t j = 0; j < k; ++j) out[cand[j].second] = cand[j].first;
    if (c.final_logit_softcap > 0) {
      for (int32_t j = 0; j < k; ++j) softcap(out + cand[j].second, 1, c.final_logit_softcap);
    }
  }
}

void pre_norm_layer(DecoderForward& f, int32_t l) {
  const LayerWeights& w = f.weights(l);
  f.norm(f.normed(), f.residual(), w.attn_norm);
  f.attention(l, f.normed(), f.block_out());
  f.add_to_residual(f.block_out());
  f.norm(f.normed(), f.residual(), w.ffn_norm);
  f.ffn(l, f.normed(), f.block_out());
  f.add_to_residual(f.block_out());
}

}  // namespace slimkv
