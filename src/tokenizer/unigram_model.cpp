#include "tokenizer/unigram_model.h"

#include <algorithm>
#include <cstdio>

#include "core/check.h"
#include "tokenizer/pretokenizer.h"

namespace slimkv {
namespace {

constexpr double kUnkPenalty = 10.0;  // HF / SentencePiece: an unknown character scores min_score - 10

uint64_t edge_key(int32_t node, unsigned char byte) { return (static_cast<uint64_t>(node) << 8) | byte; }

struct Best {
  double score = 0;
  int64_t start = -1;  // where the best path's last piece starts; -1: not reached yet
  int32_t id = -1;     // that piece (the unk id for an unknown character)
};

}  // namespace

UnigramModel::UnigramModel(UnigramVocab vocab) : v_(std::move(vocab)) {
  const size_t n = v_.pieces.size();
  SLIMKV_CHECK(n > 0, "unigram: empty vocabulary");
  SLIMKV_CHECK(v_.scores.size() == n, "unigram: {} pieces but {} scores", n, v_.scores.size());
  SLIMKV_CHECK(v_.unk_id >= -1 && v_.unk_id < static_cast<int64_t>(n), "unigram: unk id {} is outside the vocabulary",
               v_.unk_id);
  double min_score = v_.scores[0];
  for (size_t i = 0; i < n; ++i) {
    ids_[v_.pieces[i]] = static_cast<int32_t>(i);  // a repeated piece: the last id wins (HF's HashMap insert)
    min_score = std::min(min_score, v_.scores[i]);
  }
  unk_score_ = min_score - kUnkPenalty;
  terminal_.push_back(-1);
  for (const auto& [piece, id] : ids_) {
    int32_t node = 0;
    for (unsigned char b : piece) {
      auto [it, added] = edges_.emplace(edge_key(node, b), static_cast<int32_t>(terminal_.size()));
      if (added) terminal_.push_back(-1);
      node = it->second;
    }
    if (node != 0) terminal_[node] = id;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = ids_.find(name);
    byte_piece_[b] = it == ids_.end() ? -1 : it->second;
  }
}

template <class F>
void UnigramModel::prefixes(std::string_view text, size_t pos, F&& f) const {
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    auto it = edges_.find(edge_key(node, static_cast<unsigned char>(text[i])));
    if (it == edges_.end()) return;
    node = it->second;
    if (terminal_[node] >= 0) f(terminal_[node], i + 1 - pos);
  }
}

// HF Unigram::encode_optimized (SentencePiece's best path): best[end] keeps the best-scoring path ending there; a
// later candidate replaces it only when strictly better.
void UnigramModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  const size_t size = word.size();
  if (size == 0) return;
  std::vector<Best> best(size + 1);
  best[0].start = 0;
  auto offer = [&](size_t from, size_t len, int32_t id, double score) {
    Best& t = best[from + len];
    const double cand = best[from].score + score;
    if (t.start < 0 || cand > t.score) t = {cand, static_cast<int64_t>(from), id};
  };
  for (size_t at = 0; at < size;) {
    const size_t mblen = std::min(utf8_sequence_length(static_cast<unsigned char>(word[at])), size - at);
    bool single = false;
    prefixes(word, at, [&](int32_t id, size_t len) {
      offer(at, len, id, v_.scores[id]);
      single = single || len == mblen;
    });
    if (!single) offer(at, mblen, v_.unk_id, unk_score_);
    at += mblen;
  }
  // Backtrack; consecutive unknown pieces fuse into one string (HF: fuse_unk is always on for Unigram).
  struct Piece {
    size_t begin, end;
    int32_t id;
    bool unknown;
  };
  std::vector<Piece> pieces;
  for (size_t end = size; end > 0;) {
    const Best& b = best[end];
    const size_t begin = static_cast<size_t>(b.start);
    const bool unknown = b.id < 0 || b.id == v_.unk_id;
    if (unknown && !pieces.empty() && pieces.back().unknown) pieces.back().begin = begin;
    else pieces.push_back({begin, end, b.id, unknown});
    end = begin;
  }
  for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
    emit(word.substr(it->begin, it->end - it->begin), it->unknown, it->id, out);
  }
}

// HF Unigram::tokenize: a piece string maps to its id; one not in the vocabulary (a fused unknown run) becomes its
// <0xNN> pieces with byte fallback when every byte has one, else the unk id.
void UnigramModel::emit(std::string_view run, bool unknown, int32_t id, std::vector<int32_t>& out) const {
  if (!unknown) {
    out.push_back(id);
    return;
  }
  auto it = ids_.find(std::string(run));
  if (it != ids_.end()) {
    out.push_back(it->second);
    return;
  }
  const bool bytes = v_.byte_fallback && std::all_of(run.begin(), run.end(), [&](char c) {
    return byte_piece_[static_cast<unsigned char>(c)] >= 0;
  });
  if (bytes) {
    for (char c : run) out.push_back(byte_piece_[static_cast<unsigned char>(c)]);
  } else if (v_.unk_id >= 0) {
    out.push_back(v_.unk_id);
  }
}

}  // namespace slimkv
