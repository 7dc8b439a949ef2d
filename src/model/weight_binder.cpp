#include "model/weight_binder.h"

#include <cstring>

#include "core/check.h"
#include "model/block_scaled.h"

namespace slimkv {
namespace {

std::string expand(std::string s, int32_t layer, int32_t expert) {
  auto sub = [&](const std::string& key, int32_t v) {
    for (size_t p; (p = s.find(key)) != std::string::npos;) s.replace(p, key.size(), std::to_string(v));
  };
  sub("{l}", layer);
  sub("{e}", expert);
  return s;
}

std::string shape_str(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

class Binder : public LayerBinder {
 public:
  Binder(const TensorSource& src, const ModelFamily& f, ModelConfig& c, Model& m)
      : src_(src), family_(f), c_(c), m_(m) {}
  const ModelConfig& config() const override { return c_; }
  Model& model() override { return m_; }
  std::string source() const override { return src_.source(); }
  bool names(TensorRole r) const override { return entry(r) != nullptr; }

  const TensorName* entry(TensorRole r) const {
    for (const TensorName& t : family_.tensors) {
      if (t.role == r && !(src_.is_gguf() ? t.gguf : t.hf).empty()) return &t;
    }
    return nullptr;
  }
  std::string name_of(const TensorName& t, int32_t l = 0, int32_t e = 0) const {
    return expand(src_.is_gguf() ? t.gguf : t.hf, l, e);
  }
  // The tensor for role (layer l, expert e), or null when the family does not name it or the file lacks an
  // optional one; a required one that is missing is an error.
  const TensorRef* find(TensorRole r, int32_t l = 0, int32_t e = 0, bool required_here = true) const override {
    const TensorName* t = entry(r);
    if (!t) return nullptr;
    const std::string n = name_of(*t, l, e);
    const TensorRef* ref = src_.find(n);
    SLIMKV_CHECK(ref || t->need == Need::Optional || !required_here, "{}: missing tensor '{}'", src_.source(), n);
    return ref;
  }
  HfFix fix(TensorRole r) const {
    const TensorName* t = entry(r);
    return t && !src_.is_gguf() ? t->hf_fix : HfFix::None;
  }

  // A row-major [rows, cols] matrix; BF16 becomes F32 (no BF16 matmul kernel); DeepSeek's FP8 / FP4 storage is
  // decoded with its scale tensor (model/block_scaled.h).
  WeightView matrix(const TensorRef& t, int64_t rows, int64_t cols) override {
    return fixed_matrix(t, rows, cols, HfFix::None, 0);
  }
  WeightView fixed_matrix(const TensorRef& t, int64_t rows, int64_t cols, HfFix fx, int32_t heads) {
    if (is_block_scaled(t.dtype)) return convert(block_scaled(t, rows, cols), fx, heads);
    SLIMKV_CHECK(t.shape.size() == 2 && t.shape[0] == rows && t.shape[1] == cols,
                 "{}: tensor '{}' has shape {} but the hyper-parameters need [{}, {}]", src_.source(), t.name,
                 shape_str(t.shape), rows, cols);
    return convert(make_weight(t.dtype, rows, cols, t.data, t.size_bytes, t.name), fx, heads);
  }
  WeightView block_scaled(const TensorRef& t, int64_t rows, int64_t cols) {
    const std::vector<std::string> names = scale_names_for(t.name);
    const TensorRef* s = nullptr;
    for (const std::string& n : names) s = s ? s : src_.find(n);
    SLIMKV_CHECK(s, "{}: tensor '{}' is {} but its scale tensor '{}' is missing", src_.source(), t.name,
                 dtype_name(t.dtype), names.front());
    DecodedWeight d = decode_block_scaled(t, *s, rows, cols);
    auto keep = std::make_shared<std::vector<uint8_t>>(std::move(d.bytes));
    m_.keepalive.push_back(keep);
    return make_weight(d.dtype, rows, cols, keep->data(), keep->size(), t.name);
  }
  WeightView matrix(TensorRole r, int32_t l, int64_t rows, int64_t cols, int32_t heads = 0) override {
    const TensorRef* t = find(r, l);
    return t ? fixed_matrix(*t, rows, cols, fix(r), heads) : WeightView{};
  }
  WeightView convert(WeightView w, HfFix fx, int32_t heads) {
    if (w.dtype == DType::BF16 || fx == HfFix::PermuteHeads) {
      std::vector<float> f(static_cast<size_t>(w.rows * w.cols));
      for (int64_t r = 0; r < w.rows; ++r) dequantize_row(w, source_row(r, w.rows, fx, heads), f.data() + r * w.cols);
      w = WeightView{DType::F32, w.rows, w.cols, m_.own_f32(std::move(f))};
    }
    return w;
  }
  // PermuteHeads: GGUF row 2i+j of a head comes from HF row j*half+i (llama.cpp's LlamaModel.permute, inverted).
  static int64_t source_row(int64_t r, int64_t rows, HfFix fx, int32_t heads) {
    if (fx != HfFix::PermuteHeads) return r;
    const int64_t hd = rows / heads, half = hd / 2, h = r / hd, i = (r % hd) / 2, j = r % 2;
    return h * hd + j * half + i;
  }
  const float* vector(TensorRole r, int32_t l, int64_t n, int32_t heads = 0) override {
    const TensorRef* t = find(r, l);
    if (!t) return nullptr;
    SLIMKV_CHECK(t->shape.size() == 1 && t->shape[0] == n, "{}: tensor '{}' has shape {} but should be a vector of {}",
                 src_.source(), t->name, shape_str(t->shape), n);
    const HfFix fx = fix(r);
    if (t->dtype == DType::F32 && fx == HfFix::None) return reinterpret_cast<const float*>(t->data);
    WeightView w = make_weight(t->dtype, 1, n, t->data, t->size_bytes, t->name);
    std::vector<float> f(n), out(n);
    dequantize_row(w, 0, f.data());
    for (int64_t i = 0; i < n; ++i) {
      out[i] = f[source_row(i, n, fx, heads)] + (fx == HfFix::AddOne ? 1.0f : 0.0f);
    }
    return m_.own_f32(std::move(out));
  }
  // A small matrix as owned row-major floats (any stored type): position embeddings read by row.
  const float* dense_f32(TensorRole r, int32_t l, int64_t rows, int64_t cols) override {
    const TensorRef* t = find(r, l);
    if (!t) return nullptr;
    const WeightView w = matrix(*t, rows, cols);
    std::vector<float> f(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i) dequantize_row(w, i, f.data() + i * cols);
    return m_.own_f32(std::move(f));
  }
  // Experts (or heads): GGUF one 3-D [E, rows, cols] tensor, HF one tensor per expert.
  std::vector<WeightView> experts(TensorRole r, int32_t l, int64_t rows, int64_t cols, int32_t count = 0) override {
    const int32_t E = count > 0 ? count : c_.moe.num_experts;
    std::vector<WeightView> out;
    if (src_.is_gguf()) {
      const TensorRef* t = find(r, l);
      SLIMKV_CHECK(t->shape.size() == 3 && t->shape[0] == E && t->shape[1] == rows && t->shape[2] == cols,
                   "{}: tensor '{}' has shape {} but the hyper-parameters need [{}, {}, {}]", src_.source(), t->name,
                   shape_str(t->shape), E, rows, cols);
      WeightView all = convert(make_weight(t->dtype, E * rows, cols, t->data, t->size_bytes, t->name), HfFix::None, 0);
      for (int32_t e = 0; e < E; ++e) out.push_back(slice_rows(all, e * rows, rows));
    } else {
      for (int32_t e = 0; e < E; ++e) out.push_back(matrix(*find(r, l, e), rows, cols));
    }
    return out;
  }

  void bind() {
    const TensorRef* emb = find(TensorRole::TokEmbd);
    SLIMKV_CHECK(emb->shape.size() == 2, "{}: tensor '{}' must be a matrix", src_.source(), emb->name);
    if (c_.vocab_size == 0) c_.vocab_size = static_cast<int32_t>(emb->shape[0]);
    const int64_t dim = c_.dim, vocab = c_.vocab_size;
    m_.tok_embd = matrix(*emb, vocab, dim);
    m_.final_norm = vector(TensorRole::OutputNorm, 0, dim);
    const TensorRef* out = find(TensorRole::Output);
    const bool tied_hf = !src_.is_gguf() && c_tied_;
    m_.output = out && !tied_hf ? matrix(*out, vocab, dim) : m_.tok_embd;
    m_.output_tied = !out || tied_hf;
    if (entry(TensorRole::RopeFreqs) && find(TensorRole::RopeFreqs)) {
      const float* ff = vector(TensorRole::RopeFreqs, 0, c_.layers.front().rotary_dim / 2);
      for (LayerConfig& lc : c_.layers) {
        if (lc.sliding_window == 0) lc.rope.freq_factors.assign(ff, ff + lc.rotary_dim / 2);
      }
    }
    if (family_.bind_model) family_.bind_model(*this);
    m_.layers.resize(c_.num_layers);
    for (int32_t l = 0; l < c_.num_layers; ++l) bind_layer(l, c_.layers[l], m_.layers[l]);
    m_.mtp.resize(c_.num_mtp_layers);
    for (int32_t i = 0; i < c_.num_mtp_layers; ++i) bind_mtp_head(i);
  }

  // MTP head i: block num_layers + i, a decoder layer of the trunk's last layer's shape, and its nextn tensors
  // (the embedding and head are the trunk's where the file shares them).
  void bind_mtp_head(int32_t i) {
    const int32_t l = c_.num_layers + i;
    const int64_t dim = c_.dim, vocab = c_.vocab_size;
    SLIMKV_CHECK(!family_.bind_attention && !c_.layers.back().delta_net, "{}: MTP heads of family '{}' are not "
                 "read (its attention binds its own weights)", src_.source(), family_.name);
    MtpHeadWeights& h = m_.mtp[i];
    bind_layer(l, c_.layers.back(), h.layer);
    const TensorRef* eh = find(TensorRole::NextnEhProj, l);
    SLIMKV_CHECK(eh, "{}: '{}' = {} but block {} has no MTP projection (nextn.eh_proj)", src_.source(),
                 "nextn_predict_layers", c_.num_mtp_layers, l);
    h.eh_proj = matrix(TensorRole::NextnEhProj, l, dim, 2 * dim);
    h.enorm = vector(TensorRole::NextnEnorm, l, dim);
    h.hnorm = vector(TensorRole::NextnHnorm, l, dim);
    h.head_norm = vector(TensorRole::NextnHeadNorm, l, dim);
    SLIMKV_CHECK(h.enorm && h.hnorm && h.head_norm, "{}: MTP block {} lacks one of nextn.enorm, nextn.hnorm, "
                 "nextn.shared_head_norm", src_.source(), l);
    h.embed = matrix(TensorRole::NextnEmbed, l, vocab, dim);
    h.head = matrix(TensorRole::NextnHead, l, vocab, dim);
  }

  void bind_layer(int32_t l, const LayerConfig& lc, LayerWeights& w) {
    const int64_t dim = c_.dim, q = lc.q_dim(), k = lc.k_dim(), v = lc.v_dim();
    w.attn_norm = vector(TensorRole::AttnNorm, l, dim);
    if (family_.bind_attention) {
      family_.bind_attention(*this, l);  // a block that binds its own attention weights
    } else if (entry(TensorRole::AttnQkv)) {
      const TensorRef* t = find(TensorRole::AttnQkv, l);
      WeightView all = matrix(*t, q + k + v, dim);
      w.wq = slice_rows(all, 0, q);
      w.wk = slice_rows(all, q, k);
      w.wv = slice_rows(all, q + k, v);
    } else {
      w.wq = matrix(TensorRole::AttnQ, l, q, dim, lc.num_heads);
      w.wk = matrix(TensorRole::AttnK, l, k, dim, lc.num_kv_heads);
      w.wv = matrix(TensorRole::AttnV, l, v, dim);
    }
    if (!family_.bind_attention) w.wo = matrix(TensorRole::AttnOut, l, dim, lc.attn_out_dim());
    w.bq = vector(TensorRole::AttnQBias, l, q, lc.num_heads);
    w.bk = vector(TensorRole::AttnKBias, l, k, lc.num_kv_heads);
    w.bv = vector(TensorRole::AttnVBias, l, v);
    w.bo = vector(TensorRole::AttnOutBias, l, dim);
    w.q_norm = vector(TensorRole::AttnQNorm, l, lc.head_dim_k);
    w.k_norm = vector(TensorRole::AttnKNorm, l, lc.head_dim_k);
    w.attn_post_norm = vector(TensorRole::AttnPostNorm, l, dim);
    w.attn_sinks = vector(TensorRole::AttnSinks, l, lc.num_heads);
    w.ffn_norm = vector(TensorRole::FfnNorm, l, dim);
    w.ffn_post_norm = vector(TensorRole::FfnPostNorm, l, dim);
    if (lc.moe) {
      const int64_t E = c_.moe.num_experts, eff = c_.moe.expert_ffn_dim;
      w.router = matrix(TensorRole::MoeRouter, l, E, dim);
      w.exp_gate = experts(TensorRole::MoeGateExps, l, eff, dim);
      w.exp_up = experts(TensorRole::MoeUpExps, l, eff, dim);
      w.exp_down = experts(TensorRole::MoeDownExps, l, dim, eff);
      w.exp_probs_b = vector(TensorRole::MoeExpProbsB, l, E);
      if (l < c_.moe.num_hash_layers) w.tid2eid = hash_routes(l);
      w.router_b = vector(TensorRole::MoeRouterBias, l, E);
      w.exp_gate_b = dense_f32(TensorRole::MoeGateExpsBias, l, E, eff);
      w.exp_up_b = dense_f32(TensorRole::MoeUpExpsBias, l, E, eff);
      w.exp_down_b = dense_f32(TensorRole::MoeDownExpsBias, l, E, dim);
      if (c_.moe.num_shared_experts > 0) {
        const int64_t sff = c_.moe.shared_ffn_dim;
        w.shexp_gate = matrix(TensorRole::ShexpGate, l, sff, dim);
        w.shexp_up = matrix(TensorRole::ShexpUp, l, sff, dim);
        w.shexp_down = matrix(TensorRole::ShexpDown, l, dim, sff);
        w.shexp_gate_inp = vector(TensorRole::ShexpGateInp, l, dim);
      }
    } else if (entry(TensorRole::FfnGateUp)) {
      const int64_t ff = lc.ffn_dim;
      WeightView all = matrix(*find(TensorRole::FfnGateUp, l), 2 * ff, dim);
      w.w1 = slice_rows(all, 0, ff);
      w.w3 = slice_rows(all, ff, ff);
      w.w2 = matrix(TensorRole::FfnDown, l, dim, ff);
    } else {
      const int64_t ff = lc.ffn_dim;
      w.w1 = matrix(TensorRole::FfnGate, l, ff, dim);
      w.w3 = matrix(TensorRole::FfnUp, l, ff, dim);
      w.w2 = matrix(TensorRole::FfnDown, l, dim, ff);
    }
  }

  // Hash-routed MoE layers: the token id -> experts table (I32 [vocab, experts used]), checked once here.
  const int32_t* hash_routes(int32_t l) {
    const TensorRef* t = find(TensorRole::MoeTid2Eid, l);
    const int64_t V = c_.vocab_size, K = c_.moe.num_experts_used;
    SLIMKV_CHECK(t && t->dtype == DType::I32 && t->shape.size() == 2 && t->shape[0] == V && t->shape[1] == K &&
                     t->size_bytes == static_cast<uint64_t>(V * K * 4),
                 "{}: layer {} is hash-routed but has no I32 token -> experts table of shape [{}, {}]",
                 src_.source(), l, V, K);
    auto* ids = reinterpret_cast<const int32_t*>(t->data);
    for (int64_t i = 0; i < V * K; ++i) {
      SLIMKV_CHECK(ids[i] >= 0 && ids[i] < c_.moe.num_experts, "{}: tensor '{}' names expert {} (the model has {})",
                   src_.source(), t->name, ids[i], c_.moe.num_experts);
    }
    return ids;
  }

  bool c_tied_ = false;

 private:
  const TensorSource& src_;
  const ModelFamily& family_;
  ModelConfig& c_;
  Model& m_;
};

}  // namespace

void bind_weights(const TensorSource& src, const ModelFamily& family, ModelConfig& c, Model& m) {
  Binder b(src, family, c, m);
  b.c_tied_ = c.tie_word_embeddings;
  b.bind();
}

}  // namespace slimkv
