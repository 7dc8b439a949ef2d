// How a sequence's final hidden states become one embedding (/v1/embeddings): the mean over its tokens, its first
// token's (CLS) or its last token's. GGUF's `<arch>.pooling_type` numbers them as llama.cpp does (0 none, 1 mean,
// 2 cls, 3 last, 4 rank — rank, a reranker's head, is not served).
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace slimkv {

enum class Pooling : int8_t { None, Mean, First, Last };

inline const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Mean: return "mean";
    case Pooling::First: return "cls";
    case Pooling::Last: return "last";
    default: return "none";
  }
}

// "none" / "mean" / "cls" / "last"; nullopt for anything else.
inline std::optional<Pooling> parse_pooling(std::string_view s) {
  if (s == "none") return Pooling::None;
  if (s == "mean") return Pooling::Mean;
  if (s == "cls" || s == "first") return Pooling::First;
  if (s == "last") return Pooling::Last;
  return std::nullopt;
}

// GGUF's enum llama_pooling_type; nullopt for values slimkv does not pool by (rank, or unknown).
inline std::optional<Pooling> pooling_from_gguf(int64_t v) {
  switch (v) {
    case 0: return Pooling::None;
    case 1: return Pooling::Mean;
    case 2: return Pooling::First;
    case 3: return Pooling::Last;
    default: return std::nullopt;
  }
}

// A pooling that reads every prompt token's (or the first one's) state: a prefix-cache hit would skip them.
inline bool pooling_reads_prefix(Pooling p) { return p == Pooling::Mean || p == Pooling::First; }

}  // namespace slimkv
