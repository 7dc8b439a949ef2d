// The tokenizer interface every vocabulary family implements (SentencePiece-style, byte-level BPE, HF BPE).
// Owns: text <-> token ids. Must not know: models, weights or sampling.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace slimkv {

class GgufFile;

// Hugging Face's encode switches.
struct EncodeOptions {
  bool add_special = true;     // the post-processor's tokens (BOS / EOS): HF add_special_tokens
  bool parse_special = false;  // a special token's text in the input becomes its id (HF's default; off for text a
                               // user sent, so that nobody can forge control tokens: HF split_special_tokens)
};
// Hugging Face's decode switches.
struct DecodeOptions {
  bool skip_special = true;  // special tokens print nothing (HF skip_special_tokens)
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // add_special: add the vocabulary's BOS (and whatever its convention prepends); false = raw text only,
  // as llama.cpp's tokenizer test vectors are produced.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special) const = 0;
  // Hugging Face's encode (a vocabulary that cannot parse special tokens ignores parse_special).
  virtual std::vector<int32_t> encode(std::string_view text, const EncodeOptions& opts) const {
    return encode(text, opts.add_special);
  }
  // The bytes token `id` contributes to running text when it follows `prev_id` (-1 at the start).
  // Handles conventions such as "strip the leading space of the first piece after BOS". May be a partial
  // UTF-8 sequence (byte-fallback tokens); use StreamDecoder to print safely.
  virtual std::string decode_token(int32_t prev_id, int32_t id) const = 0;
  virtual int32_t vocab_size() const = 0;
  // The token's text as the vocabulary stores it (a special token's own text, e.g. "<s>", which decode_token leaves
  // out); "" when out of range or unknown to the implementation. A chat template's bos_token / eos_token.
  virtual std::string token_text(int32_t id) const { (void)id; return ""; }
  int32_t bos_id() const { return bos_id_; }
  int32_t eos_id() const { return eos_id_; }

  std::string decode(const std::vector<int32_t>& ids) const;  // concatenation of decode_token over ids
  // Hugging Face's decode: the tokenizer's decoder chain over the whole sequence, invalid UTF-8 replaced as HF does,
  // and clean_up_tokenization_spaces where the tokenizer's config sets it. Default: decode(ids) (special tokens
  // print nothing either way).
  virtual std::string decode(const std::vector<int32_t>& ids, const DecodeOptions& opts) const {
    (void)opts;
    return decode(ids);
  }
  // The most bytes any one token decodes to (computed once): a text of B bytes has at least about
  // B / max_token_bytes() tokens, which bounds a prompt's length without tokenizing it.
  size_t max_token_bytes() const;

 protected:
  mutable size_t max_token_bytes_ = 0;  // 0 = not computed yet
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
};

// llama2.c tokenizer.bin (run.c conventions: BOS=1, EOS=2, dummy-prefix space, byte fallback <0xNN>).
std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const std::string& path, int32_t vocab_size);
std::unique_ptr<Tokenizer> llama2c_tokenizer_from_bytes(std::span<const uint8_t> bytes, int32_t vocab_size,
                                                        const std::string& what);
// The vocabulary stored in a GGUF file (tokenizer.ggml.model = llama | gpt2).
std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& gguf);
// A Hugging Face tokenizer.json (BPE, Unigram or WordPiece model): the file, its gzipped copy, or a folder holding
// either; a tokenizer_config.json beside it sets BOS / EOS, add_bos / add_eos and clean_up_tokenization_spaces.
std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::string& path);
// A file's bytes, gunzipped when it is gzip (a plain file as it is).
std::string read_maybe_gzip_file(const std::string& path);
std::unique_ptr<Tokenizer> hf_tokenizer_from_json(std::string_view json_text, const std::string& what);

}  // namespace slimkv
