// Merge-rank BPE (GPT-2, llama.cpp, HF): each pre-token word is split into characters and the adjacent pair with the
// lowest merge rank merges first (leftmost on ties). Byte-level vocabularies (GGUF gpt2, tokenizer.json ByteLevel)
// and SentencePiece-like tokenizer.json BPE (U+2581, <0xNN>). Owns: the encode pipeline, the GPT-2 byte mapping,
// decoding. A WordModel (Unigram, WordPiece) may replace the merges inside each word.
// Must not know: file formats (the GGUF and tokenizer.json loaders fill BpeConfig).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/token_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/word_model.h"

namespace slimkv {

// Token types (GGUF tokenizer.ggml.token_type numbering).
enum BpeTokenType : int32_t { kTokNormal = 1, kTokUnknown = 2, kTokControl = 3, kTokUserDefined = 4, kTokUnused = 5,
                              kTokByte = 6 };

struct BpeConfig {
  std::vector<std::string> pieces;  // [vocab] token text as stored (byte-level characters for GPT-2 style)
  std::vector<int32_t> types;       // [vocab] BpeTokenType; empty = all normal
  std::vector<std::pair<std::string, std::string>> merges;  // rank order: merges[0] is applied first

  // Encoding pipeline, in order (Hugging Face's): added tokens matched in the raw text, normalizer, added tokens
  // matched in the normalized text, Metaspace / ByteLevel prefix, pre-tokenizer splits, byte mapping, merges.
  // Special (control) tokens come from text only with EncodeOptions::parse_special.
  std::vector<AddedToken> added;          // empty: every user-defined (non-special) and control (special) token
  std::vector<NormalizeStep> normalizer;  // per stretch of text between added tokens
  std::string metaspace;                // non-empty: Metaspace — every ' ' becomes this, and it is prepended ...
  enum class Prepend { kAlways, kFirst, kNever } metaspace_prepend = Prepend::kAlways;  // ... (kFirst: at offset 0)
                                        // unless the text starts with it already
  bool add_prefix_space = false;        // ByteLevel add_prefix_space: ' ' before a fragment not starting with one
  std::vector<SplitRule> pretokenizer;  // regex splits, in order; empty: each fragment is one word
  bool byte_level = true;               // map each byte through GPT-2 bytes_to_unicode before merging
  std::shared_ptr<const WordModel> word_model;  // non-null: encodes each word instead of the merges (and the
                                        // byte_fallback / unk / ignore_merges settings below)
  bool ignore_merges = false;           // a word that is itself a piece is emitted whole
  bool byte_fallback = false;           // a character without a piece becomes its <0xNN> pieces ...
  int32_t unk_id = -1;                  // ... else unk_id (one per run of them with fuse_unk); -1: dropped
  bool fuse_unk = false;
  std::vector<int32_t> prefix_ids;      // encode(add_special=true) puts these before the text (BOS) ...
  std::vector<int32_t> suffix_ids;      // ... and these after it
  int32_t bos_id = -1, eos_id = -1;

  // Decoding. Control and unknown tokens decode to nothing; user-defined ones to their text as is.
  bool decode_byte_level = true;        // map characters back to bytes through the GPT-2 mapping
  bool decode_byte_fallback = false;    // a <0xNN> piece decodes to that byte
  std::string decode_space_marker;      // replaced by ' ' ("▁")
  bool strip_leading_space = false;     // the first piece (prev_id -1 or BOS) loses one leading space
  std::string decode_subword_prefix;    // non-empty: WordPiece — after the first piece (prev_id -1 or BOS), a
                                        // piece loses this prefix, or else gets a space before it
  bool decode_cleanup = false;          // WordPiece cleanup (wordpiece_cleanup) on each piece
  // Hugging Face's whole-sequence decode (decode(ids, DecodeOptions)); empty: the per-token rules above.
  std::vector<DecodeStep> decoders;
  bool clean_up_spaces = false;         // transformers' clean_up_tokenization_spaces
};

class BpeTokenizer : public Tokenizer {
 public:
  explicit BpeTokenizer(BpeConfig config);  // validates ids and patterns; throws Error
  using Tokenizer::decode;
  std::vector<int32_t> encode(std::string_view text, bool add_special) const override;
  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& opts) const override;
  std::string decode(const std::vector<int32_t>& ids, const DecodeOptions& opts) const override;
  std::string decode_token(int32_t prev_id, int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(cfg_.pieces.size()); }
  std::string token_text(int32_t id) const override { return id >= 0 && id < vocab_size() ? cfg_.pieces[id] : ""; }
  const BpeConfig& config() const { return cfg_; }

  struct Scratch;  // per-call work buffers (encode is const and thread-safe)

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Merge {
    int32_t rank, result;
  };
  int32_t symbol(std::string_view s) const;  // interned id (pieces first, then merge-only strings) or -1
  int32_t intern(const std::string& s);
  void encode_fragment(std::string_view text, bool at_start, std::vector<int32_t>& out, Scratch& sc) const;
  void encode_word(std::string_view word, std::vector<int32_t>& out, Scratch& sc) const;
  int32_t type_of(int32_t id) const { return cfg_.types.empty() ? kTokNormal : cfg_.types[id]; }

  BpeConfig cfg_;
  PreTokenizer pre_;
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> symbols_;
  int32_t n_symbols_ = 0;
  std::unordered_map<uint64_t, Merge> merges_;  // (left symbol << 32 | right symbol) -> rank and result
  Normalizer normalizer_;
  AddedTokenMatcher raw_added_, normalized_added_;  // added tokens matched before / after the normalizer
  int32_t byte_piece_[256];                     // id of <0xNN>, or -1
  int32_t raw_byte_id_[256];                    // id of the one-byte piece equal to the byte, or -1
};

// GPT-2's reversible byte -> printable unicode character mapping (UTF-8 of the character).
const std::string& byte_to_unicode(uint8_t byte);

}  // namespace slimkv
