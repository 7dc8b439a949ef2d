#include "tokenizer/gguf_vocab_writer.h"

#include "core/check.h"

namespace slimkv {
namespace {

// llama.cpp's pre-tokenizer check text (convert_hf_to_gguf.py chktxt) plus mixed-case words (gpt-4o's split).
const char kCheckText[] =
    "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n\xF0\x9F\x9A\x80 (normal) \xF0\x9F\x98\xB6\xE2\x80\x8D"
    "\xF0\x9F\x8C\xAB\xEF\xB8\x8F (multiple emojis concatenated) \xE2\x9C\x85 3 33 333 3333 33333 333333 3333333 "
    "3.3 3..3 3...3 \xE6\x88\x91\xE6\x83\xB3\xE5\x9C\xA8" "apple\xE5\xB7\xA5\xE4\xBD\x9C" "1314151\xE5\xA4\xA9\xEF\xBD\x9E "
    "------======= \xD0\xBD\xD0\xB5\xD1\x89\xD0\xBE ''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's "
    "there, 'RE you sure? 'M not sure I'll make it, 'D you like some tea? We'Ve a'lL HTTPServer getHTTPResponse "
    "\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF x/y\r\n/z";

std::vector<std::string> splits(const PreTokenizer& p) {
  std::vector<std::string_view> out;
  p.split(kCheckText, out);
  return {out.begin(), out.end()};
}

bool is_byte_piece(const std::string& p) {
  return p.size() == 6 && p.compare(0, 3, "<0x") == 0 && p.back() == '>';
}

std::vector<std::string> merge_strings(const BpeConfig& c) {
  std::vector<std::string> out;
  out.reserve(c.merges.size());
  for (const auto& [a, b] : c.merges) {
    SLIMKV_CHECK(a.find(' ') == std::string::npos && b.find(' ') == std::string::npos,
                 "GGUF vocabulary: merge '{}' '{}' holds a space, which tokenizer.ggml.merges cannot express", a, b);
    out.push_back(a + " " + b);
  }
  return out;
}

void write_common(GgufWriter& w, const BpeConfig& c) {
  std::vector<int32_t> types = c.types;
  if (types.empty()) types.assign(c.pieces.size(), kTokNormal);
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] == kTokNormal && c.byte_fallback && is_byte_piece(c.pieces[i])) types[i] = kTokByte;
  }
  if (c.unk_id >= 0) types[c.unk_id] = kTokUnknown;
  w.add_strings("tokenizer.ggml.tokens", c.pieces);
  w.add_i32s("tokenizer.ggml.token_type", types);
  w.add_strings("tokenizer.ggml.merges", merge_strings(c));
  if (c.bos_id >= 0) w.add_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(c.bos_id));
  if (c.eos_id >= 0) w.add_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(c.eos_id));
  if (c.unk_id >= 0) w.add_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(c.unk_id));
  SLIMKV_CHECK(c.prefix_ids.size() <= 1 && c.suffix_ids.size() <= 1 &&
                   (c.prefix_ids.empty() || c.prefix_ids[0] == c.bos_id) &&
                   (c.suffix_ids.empty() || c.suffix_ids[0] == c.eos_id),
               "GGUF vocabulary: a post-processor other than BOS / EOS has no GGUF form");
  w.add_bool("tokenizer.ggml.add_bos_token", !c.prefix_ids.empty());
  w.add_bool("tokenizer.ggml.add_eos_token", !c.suffix_ids.empty());
}

}  // namespace

std::string pretokenizer_name_for(const std::vector<SplitRule>& rules) {
  const std::vector<std::string> want = splits(PreTokenizer(rules));
  for (const std::string& name : pretokenizer_preset_names()) {
    if (splits(PreTokenizer(pretokenizer_preset(name).patterns)) == want) return name;
  }
  return "";
}

void write_bpe_vocab(GgufWriter& w, const BpeConfig& c) {
  SLIMKV_CHECK(!c.word_model, "GGUF vocabulary: a Unigram or WordPiece tokenizer.json is not written as GGUF here");
  if (c.byte_level) {
    SLIMKV_CHECK(c.metaspace.empty() && !c.add_prefix_space, "GGUF vocabulary: a byte-level vocabulary with a "
                 "prefix space or Metaspace has no GGUF form");
    for (const NormalizeStep& s : c.normalizer) {
      SLIMKV_CHECK(s.kind == NormalizeStep::kNfc, "GGUF vocabulary: only an NFC normalizer has a GGUF form "
                   "(tokenizer.ggml.pre implies it)");
    }
    const std::string pre = pretokenizer_name_for(c.pretokenizer);
    SLIMKV_CHECK(!pre.empty(), "GGUF vocabulary: no tokenizer.ggml.pre name splits text as this pre-tokenizer does");
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", pre);
    write_common(w, c);
    return;
  }
  // SentencePiece-like: ' ' -> U+2581 (a Replace normalizer or Metaspace), byte fallback, no regex splits.
  const std::string marker = "\xE2\x96\x81";
  bool replaces = c.metaspace == marker;
  for (const NormalizeStep& s : c.normalizer) {
    const bool space = s.kind == NormalizeStep::kReplace && !s.regex && s.pattern == " " && s.content == marker;
    SLIMKV_CHECK(space && c.metaspace.empty(), "GGUF vocabulary: this normalizer has no GGUF form");
    replaces = true;
  }
  SLIMKV_CHECK(replaces, "GGUF vocabulary: a vocabulary that is neither byte-level nor U+2581-spaced has no GGUF form");
  for (const SplitRule& r : c.pretokenizer) {  // Gemma's Split(" ") after the replacement splits nothing
    SLIMKV_CHECK(r.pattern == "\\Q \\E" || r.pattern == "\\Q" + marker + "\\E",
                 "GGUF vocabulary: a regex pre-tokenizer on a SentencePiece-like vocabulary has no GGUF form");
  }
  const bool prefix = !c.metaspace.empty() && c.metaspace_prepend != BpeConfig::Prepend::kNever;
  SLIMKV_CHECK(!prefix || c.metaspace_prepend == BpeConfig::Prepend::kFirst,
               "GGUF vocabulary: Metaspace prepend_scheme 'always' has no GGUF form (llama.cpp prefixes the first "
               "fragment only)");
  std::vector<float> scores(c.pieces.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = -static_cast<float>(i);  // SentencePiece order
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string("tokenizer.ggml.pre", "default");
  w.add_f32s("tokenizer.ggml.scores", scores);
  w.add_bool("tokenizer.ggml.add_space_prefix", prefix);
  write_common(w, c);
}

}  // namespace slimkv
