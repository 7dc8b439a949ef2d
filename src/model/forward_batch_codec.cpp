#include "model/forward_batch_codec.h"

#include <cstring>
#include <type_traits>

#include "core/check.h"

namespace slimkv {
namespace {

class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& o) : out(o) { out.clear(); }
  template <class T>
  void scalar(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  template <class T>
  void vec(const std::vector<T>& v) {
    scalar<int64_t>(static_cast<int64_t>(v.size()));
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    out.insert(out.end(), p, p + v.size() * sizeof(T));
  }
  std::vector<uint8_t>& out;  // reused between steps: its capacity stays
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  template <class T>
  T scalar() {
    SLIMKV_CHECK(pos_ + sizeof(T) <= b_.size(), "forward batch: {} bytes end inside a field", b_.size());
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  template <class T>
  std::vector<T> vec() {
    const int64_t n = scalar<int64_t>();
    SLIMKV_CHECK(n >= 0 && static_cast<uint64_t>(n) <= (b_.size() - pos_) / sizeof(T),
                 "forward batch: a vector of {} entries past the end of {} bytes", n, b_.size());
    std::vector<T> v(static_cast<size_t>(n));
    std::memcpy(v.data(), b_.data() + pos_, v.size() * sizeof(T));
    pos_ += v.size() * sizeof(T);
    return v;
  }
  bool done() const { return pos_ == b_.size(); }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

void write_meta(Writer& w, const PagedBatchMeta& m) {
  w.scalar<int32_t>(m.block_size);
  w.vec(m.token_seq);
  w.vec(m.token_pos);
  w.vec(m.kv_indptr);
  w.vec(m.kv_indices);
  w.vec(m.kv_last_page_len);
  w.vec(m.token_ctx);
  w.vec(m.token_track);
  w.vec(m.kv_page_logical);
  w.vec(m.seq_has_summary);
  w.vec(m.seq_summary_bias);
  w.vec(m.seq_query_by_query);  // verify chunks attend (and keep importance) row by row on every rank
}

PagedBatchMeta read_meta(Reader& r) {
  PagedBatchMeta m;
  m.block_size = r.scalar<int32_t>();
  m.token_seq = r.vec<int32_t>();
  m.token_pos = r.vec<int32_t>();
  m.kv_indptr = r.vec<int32_t>();
  m.kv_indices = r.vec<int32_t>();
  m.kv_last_page_len = r.vec<int32_t>();
  m.token_ctx = r.vec<int32_t>();
  m.token_track = r.vec<uint8_t>();
  m.kv_page_logical = r.vec<int32_t>();
  m.seq_has_summary = r.vec<uint8_t>();
  m.seq_summary_bias = r.vec<float>();
  m.seq_query_by_query = r.vec<uint8_t>();
  SLIMKV_CHECK(m.seq_query_by_query.empty() || m.seq_query_by_query.size() + 1 == m.kv_indptr.size(),
               "forward batch: {} query-by-query flags for {} sequences", m.seq_query_by_query.size(),
               m.kv_indptr.empty() ? 0 : m.kv_indptr.size() - 1);
  return m;
}

}  // namespace

void encode_forward_batch(const ForwardBatch& b, std::vector<uint8_t>& out) {
  Writer w(out);
  w.vec(b.token_ids);
  w.vec(b.positions);
  w.scalar<int64_t>(static_cast<int64_t>(b.slots.size()));
  for (const auto& s : b.slots) w.vec(s);
  w.scalar<int64_t>(static_cast<int64_t>(b.attn.size()));
  for (const auto& m : b.attn) write_meta(w, m);
  w.scalar<int64_t>(static_cast<int64_t>(b.states.size()));
  for (const auto& s : b.states) w.vec(s);
  w.vec(b.draft_state_blocks);
  w.vec(b.logits_rows);
  w.scalar<int32_t>(b.logits_candidates);
  w.vec(b.summary_folds);
}

ForwardBatch decode_forward_batch(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  ForwardBatch b;
  b.token_ids = r.vec<int32_t>();
  b.positions = r.vec<int32_t>();
  auto count = [&](const char* what) {
    const int64_t n = r.scalar<int64_t>();
    SLIMKV_CHECK(n >= 0 && n <= 4096, "forward batch: {} {}", n, what);
    return static_cast<size_t>(n);
  };
  b.slots.resize(count("slot groups"));
  for (auto& s : b.slots) s = r.vec<int64_t>();
  b.attn.resize(count("attention groups"));
  for (auto& m : b.attn) m = read_meta(r);
  b.states.resize(count("state groups"));
  for (auto& s : b.states) s = r.vec<StateSlots>();
  b.draft_state_blocks = r.vec<int32_t>();  // their ranges: DecoderForward::check_batch, as every batch's
  b.logits_rows = r.vec<int32_t>();
  b.logits_candidates = r.scalar<int32_t>();
  SLIMKV_CHECK(b.logits_candidates >= 0, "forward batch: {} logits candidates", b.logits_candidates);
  b.summary_folds = r.vec<SummaryFold>();
  SLIMKV_CHECK(r.done(), "forward batch: {} bytes, more than one batch", bytes.size());
  return b;
}

}  // namespace slimkv
