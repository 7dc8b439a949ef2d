// A model's vocabulary as the grammar engine sees it: each token id's bytes and the end-of-sequence ids, with a
// byte trie over the tokens (children contiguous, sorted by byte) so a mask walks shared prefixes once.
// Owns: TokenVocabulary. Must not know: tokenizers, models, grammar rules, parse state.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/plain_text.h"

namespace slimkv::grammar {

class TokenVocabulary {
 public:
  struct TrieNode {
    uint32_t first_edge = 0;   // children: edges [first_edge, first_edge + edge_count)
    uint32_t edge_count = 0;
    uint32_t first_token = 0;  // ids whose bytes end here: token_order()[first_token, first_token + token_count)
    uint32_t token_count = 0;
    uint32_t subtree_end = 0;  // the subtree's tokens: token_order()[first_token, subtree_end)
    uint32_t below_class = 0;  // below_class(i): every byte on the edges below this node
    uint32_t height = 0;       // the longest path of bytes below this node
    // Every token below, counted from the edge byte into this node, is plain text (grammar/plain_text.h) of at most
    // this many characters; -1 when some is not (or at the root).
    int32_t plain_chars = -1;
    int32_t ascii_chars = -1;  // the same for plain ASCII text only
  };
  struct Edge {
    uint8_t byte;
    uint32_t child;
  };

  // token_bytes[id] = the bytes token id appends to the text ("" = never allowed unless it is an EOS id);
  // eos_ids = the ids allowed (only) once the grammar is complete. A slimkv::Error on an id out of range.
  TokenVocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> eos_ids);

  size_t size() const { return bytes_.size(); }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  bool is_eos(int32_t id) const { return is_eos_[static_cast<size_t>(id)] != 0; }
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }

  const TrieNode& node(uint32_t i) const { return nodes_[i]; }
  const Edge& edge(uint32_t i) const { return edges_[i]; }
  const std::vector<int32_t>& token_order() const { return order_; }
  // The bytes of token_order()[t] that start a character (not 0x80..0xBF): its characters when it is plain text.
  uint32_t order_chars(uint32_t t) const { return order_chars_[t]; }
  const ByteClass& below_class(uint32_t index) const { return below_classes_[index]; }
  size_t node_count() const { return nodes_.size(); }
  static constexpr uint32_t kRoot = 0;

 private:
  uint32_t build(size_t lo, size_t hi, size_t depth);
  int subtree_plain_chars(size_t lo, size_t hi, size_t depth, PlainAlphabet alphabet) const;
  uint32_t class_index(const ByteClass& c);
  std::vector<std::string> bytes_;
  std::vector<int32_t> eos_ids_;
  std::vector<uint8_t> is_eos_;
  std::vector<int32_t> order_;  // trie tokens sorted by bytes
  std::vector<uint32_t> order_chars_;  // [order_.size()]
  std::vector<TrieNode> nodes_;
  std::vector<Edge> edges_;
  std::vector<ByteClass> below_classes_;  // distinct classes of TrieNode::below_class
  std::unordered_map<std::string, uint32_t> class_ids_;
};

}  // namespace slimkv::grammar
