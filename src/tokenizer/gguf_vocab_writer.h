// Writes a merge-rank BPE vocabulary (a loaded tokenizer.json) as GGUF's tokenizer.ggml.* keys, so that
// tokenizer_from_gguf gives the same ids: byte-level vocabularies as `gpt2` with the tokenizer.ggml.pre name whose
// splits agree with the file's pre-tokenizer; SentencePiece-like ones (U+2581, byte fallback) as `llama` with
// scores, token types and the merges. Owns: that mapping. Must not know: model weights.
#pragma once
#include "formats/gguf_writer.h"
#include "tokenizer/bpe_tokenizer.h"

namespace slimkv {

// Throws Error naming what has no GGUF form (a normalizer, an unknown pre-tokenizer, a decoder).
void write_bpe_vocab(GgufWriter& w, const BpeConfig& c);
// The tokenizer.ggml.pre name whose splits agree with `rules` on a check text, or "" when none does.
std::string pretokenizer_name_for(const std::vector<SplitRule>& rules);

}  // namespace slimkv
