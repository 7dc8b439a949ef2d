#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <utility>

#include "core/check.h"

namespace slimkv {
namespace {

// Regexes as llama.cpp (src/llama-vocab.cpp, llm_tokenizer_bpe) and the models' tokenizer.json files define them.
const std::string kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const std::string kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kCjk = R"([\x{4e00}-\x{9fa5}\x{800}-\x{4e00}\x{ac00}-\x{d7ff}]+)";
// DeepSeek LLM's cased-letter class (from its tokenizer.json), written as code points.
const std::string kDeepseekLetters =
    R"(\s?[A-Za-z\x{b5}\x{c0}-\x{d6}\x{d8}-\x{f6}\x{f8}-\x{1ba}\x{1bc}-\x{1bf}\x{1c4}-\x{293}\x{295}-\x{2af})"
    R"(\x{370}-\x{373}\x{376}\x{377}\x{37b}-\x{37d}\x{37f}\x{386}\x{388}-\x{38a}\x{38c}\x{38e}-\x{3a1})"
    R"(\x{3a3}-\x{3f5}\x{3f7}-\x{481}\x{48a}-\x{52f}\x{531}-\x{556}\x{10a0}-\x{10c5}\x{13a0}-\x{13f5})"
    R"(\x{13f8}-\x{13fd}\x{1c90}-\x{1cba}\x{1cbd}-\x{1cbf}\x{1d00}-\x{1d2b}\x{1d6b}-\x{1d77}\x{1d79}-\x{1d9a})"
    R"(\x{1e00}-\x{1f15}\x{1f18}-\x{1f1d}\x{1f20}-\x{1f45}\x{1f48}-\x{1f4d}\x{1f50}-\x{1f57}\x{1f59}\x{1f5b})"
    R"(\x{1f5d}\x{1f5f}-\x{1f7d}\x{1f80}-\x{1fb4}\x{1fb6}-\x{1fbc}\x{1fbe}\x{1fc2}-\x{1fc4}\x{1fc6}-\x{1fcc})"
    R"(\x{1fd0}-\x{1fd3}\x{1fd6}-\x{1fdb}\x{1fe0}-\x{1fec}\x{1ff2}-\x{1ff4}\x{1ff6}-\x{1ffc}\x{2102}\x{2107})"
    R"(\x{210a}-\x{2113}\x{2115}\x{2119}-\x{211d}\x{2124}\x{2126}\x{2128}\x{212a}-\x{212d}\x{212f}-\x{2134})"
    R"(\x{2139}\x{213c}-\x{213f}\x{2145}-\x{2149}\x{214e}\x{2183}\x{2184}\x{2c00}-\x{2c7b}\x{2c7e}-\x{2ce4})"
    R"(\x{2ceb}-\x{2cee}\x{2cf2}\x{2cf3}\x{a640}-\x{a66d}\x{a680}-\x{a69b}\x{a722}-\x{a76f}\x{a771}-\x{a787})"
    R"(\x{a78b}-\x{a78e}\x{ab70}-\x{abbf}\x{fb00}-\x{fb06}\x{fb13}-\x{fb17}\x{ff21}-\x{ff3a}\x{ff41}-\x{ff5a})"
    R"(\x{10400}-\x{1044f}\x{104b0}-\x{104d3}\x{104d8}-\x{104fb}\x{10c80}-\x{10cb2}\x{10cc0}-\x{10cf2})"
    R"(\x{118a0}-\x{118df}\x{1e900}-\x{1e943}]+)";
const std::string kPoro = R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{ff0c}\x{3001}\x{964}\x{6d4}\x{60c})]+)";
const std::string kUpperLower = R"(\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M})";
const std::string kLowerish = R"(\p{Ll}\p{Lm}\p{Lo}\p{M})";
const std::string kContraction = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)?)";

struct NamedPreset {
  std::vector<std::string_view> names;
  PreTokenizerPreset preset;
};

const std::vector<NamedPreset>& presets() {
  static const std::vector<NamedPreset> table = [] {
    std::vector<NamedPreset> t;
    t.push_back({{"default"}, {{R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}, false}});
    t.push_back({{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
                 {{kLlama3}, true}});
    t.push_back({{"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}, {{kLlama3}, false}});
    t.push_back({{"deepseek-llm"},
                 {{R"([\r\n])", kDeepseekLetters,
                   R"(\s?[!-/:-~\x{ff01}-\x{ff0f}\x{ff1a}-\x{ff5e}\x{2018}-\x{201f}\x{3000}-\x{3002}]+)", R"(\s+$)",
                   kCjk, R"(\p{N}+)"},
                  false}});
    t.push_back({{"deepseek-coder"}, {{R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"}, false}});
    t.push_back({{"deepseek-v3"},
                 {{R"(\p{N}{1,3})", R"([\x{4e00}-\x{9fa5}\x{3040}-\x{309f}\x{30a0}-\x{30ff}]+)",
                   R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+)"
                   R"(| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
                  false}});
    t.push_back({{"falcon"}, {{R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}, false}});
    t.push_back({{"gpt-2", "mpt", "olmo", "jais", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es",
                  "jina-v2-de", "jina-v1-en", "jina-v2-code", "roberta-bpe", "trillion", "exaone4", "a.x-4.0",
                  "mellum", "modern-bert", "granite-docling"},
                 {{kGpt2}, false}});
    t.push_back({{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
                 {{R"(\p{N})", kGpt2}, false}});
    t.push_back({{"qwen2", "deepseek-r1-qwen", "megrez", "stablelm2", "hunyuan", "kormo"}, {{kQwen2}, false}});
    t.push_back({{"poro-chat", "bloom", "gpt3-finnish"}, {{kPoro}, false}});
    t.push_back({{"viking"}, {{kPoro, R"(\p{N})"}, false}});
    t.push_back({{"tekken"},
                 {{"[^\\r\\n\\p{L}\\p{N}]?[" + kUpperLower + "]*[" + kLowerish + "]+|[^\\r\\n\\p{L}\\p{N}]?[" +
                   kUpperLower + "]+[" + kLowerish + R"(]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
                  true}});
    t.push_back({{"gpt-4o", "llama4"},
                 {{"[^\\r\\n\\p{L}\\p{N}]?[" + kUpperLower + "]*[" + kLowerish + "]+" + kContraction +
                   "|[^\\r\\n\\p{L}\\p{N}]?[" + kUpperLower + "]+[" + kLowerish + "]*" + kContraction +
                   R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
                  false}});
    t.push_back({{"seed-coder"},
                 {{R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
                   R"(| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"},
                  false}});
    t.push_back({{"bailingmoe", "bailingmoe2", "llada-moe"},
                 {{R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*)"
                   R"(|\s*[\r\n]|\s+(?!\S)|\s+)"},
                  false}});
    return t;
  }();
  return table;
}

// PCRE2's \s (with UCP) is tab..CR plus the Z categories; the tokenizers' \s (Rust/Python regex, llama.cpp) is the
// Unicode White_Space set, which also holds U+0085. Add it.
std::string adapt_whitespace(const std::string& p) {
  std::string out;
  out.reserve(p.size() + 16);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char d = p[++i];
      if (d == 's') out += in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
      else if (d == 'S' && !in_class) out += "[^\\s\\x{85}]";
      else (out += c) += d;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a leading ']' is a literal
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

}  // namespace

namespace {

struct Segment {
  size_t begin, end;
  bool match;
};

// Appends the pieces a rule's behavior keeps of `segs` (consecutive, covering `piece`) to `out`.
void keep_segments(std::string_view piece, std::vector<Segment>& segs, const SplitRule& rule,
                   std::vector<std::string_view>& out) {
  if (rule.invert) {
    for (Segment& s : segs) s.match = !s.match;
  }
  std::vector<Segment> kept;
  switch (rule.behavior) {
    case SplitBehavior::kIsolated: kept = segs; break;
    case SplitBehavior::kRemoved:
      for (const Segment& s : segs) {
        if (!s.match) kept.push_back(s);
      }
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool prev_match = false;
      for (const Segment& s : segs) {
        if (s.match && !prev_match && !kept.empty()) kept.back().end = s.end;
        else kept.push_back(s);
        prev_match = s.match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool prev_match = false;
      for (size_t i = segs.size(); i-- > 0;) {
        const Segment& s = segs[i];
        if (s.match && !prev_match && !kept.empty()) kept.back().begin = s.begin;
        else kept.push_back(s);
        prev_match = s.match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    }
    case SplitBehavior::kContiguous:
      for (const Segment& s : segs) {
        if (!kept.empty() && kept.back().match == s.match) kept.back().end = s.end;
        else kept.push_back(s);
      }
      break;
  }
  for (const Segment& s : kept) {
    if (s.end > s.begin) out.push_back(piece.substr(s.begin, s.end - s.begin));
  }
}

}  // namespace

struct PreTokenizer::Compiled {
  pcre2_code* code = nullptr;
  std::string source;
  ~Compiled() { pcre2_code_free(code); }
};

PreTokenizerPreset pretokenizer_preset(std::string_view name) {
  for (const auto& p : presets()) {
    for (auto n : p.names) {
      if (n == name) return p.preset;
    }
  }
  std::string known;
  for (const auto& n : pretokenizer_preset_names()) known += (known.empty() ? "" : ", ") + n;
  fail("unknown pre-tokenizer '{}' (tokenizer.ggml.pre); supported: {}", name, known);
}

std::vector<std::string> pretokenizer_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) {
    for (auto n : p.names) names.emplace_back(n);
  }
  return names;
}

const std::string& gpt2_pretokenizer_pattern() { return kGpt2; }

PreTokenizer::PreTokenizer(const std::vector<std::string>& patterns)
    : PreTokenizer(std::vector<SplitRule>(patterns.begin(), patterns.end())) {}

PreTokenizer::PreTokenizer(const std::vector<SplitRule>& rules) : rules_(rules) {
  for (const SplitRule& rule : rules) {
    const std::string& source = rule.pattern;
    auto c = std::make_shared<Compiled>();
    c->source = source;
    std::string adapted = adapt_whitespace(source);
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    c->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(adapted.data()), adapted.size(),
                            PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &err_offset, nullptr);
    if (c->code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof(msg));
      fail("pre-tokenizer regex '{}' does not compile: {} (at offset {})", source, reinterpret_cast<char*>(msg),
           err_offset);
    }
    pcre2_jit_compile(c->code, PCRE2_JIT_COMPLETE);  // optional speed-up; the interpreter is used if JIT fails
    patterns_.push_back(std::move(c));
  }
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  if (patterns_.empty()) {
    out.push_back(text);
    return;
  }
  std::vector<std::string_view> cur{text}, next;
  std::vector<Segment> segs;
  for (size_t r = 0; r < patterns_.size(); ++r) {
    const auto& pat = patterns_[r];
    std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> md(
        pcre2_match_data_create_from_pattern(pat->code, nullptr), pcre2_match_data_free);
    SLIMKV_CHECK(md != nullptr, "pre-tokenizer: out of memory");
    next.clear();
    for (std::string_view piece : cur) {
      segs.clear();
      auto subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t pos = 0, gap = 0;
      while (pos < piece.size()) {
        int rc = pcre2_match(pat->code, subject, piece.size(), pos, PCRE2_NO_UTF_CHECK, md.get(), nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
          rc = pcre2_match(pat->code, subject, piece.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md.get(),
                           nullptr);
        }
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
          PCRE2_UCHAR msg[256];
          pcre2_get_error_message(rc, msg, sizeof(msg));
          fail("pre-tokenizer regex '{}' failed on the input: {}", pat->source, reinterpret_cast<char*>(msg));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
        size_t b = ov[0], e = ov[1];
        if (e <= b) {  // empty match: it splits nothing; search again one character later
          if (b >= piece.size()) break;
          pos = b + utf8_sequence_length(static_cast<unsigned char>(piece[b]));
          continue;
        }
        if (b > gap) segs.push_back({gap, b, false});
        segs.push_back({b, e, true});
        gap = pos = e;
      }
      if (gap < piece.size()) segs.push_back({gap, piece.size(), false});
      keep_segments(piece, segs, rules_[r], next);
    }
    std::swap(cur, next);
  }
  out.insert(out.end(), cur.begin(), cur.end());
}

size_t utf8_sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto cont = [&](size_t i) { return i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; };
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    if (c < 0x80) {
      n = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = cont(i + 1) ? 2 : 0;
    } else if (c >= 0xE0 && c <= 0xEF) {
      unsigned char c1 = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
      bool ok1 = c == 0xE0 ? (c1 >= 0xA0 && c1 <= 0xBF) : c == 0xED ? (c1 >= 0x80 && c1 <= 0x9F) : cont(i + 1);
      n = ok1 && cont(i + 2) ? 3 : 0;
    } else if (c >= 0xF0 && c <= 0xF4) {
      unsigned char c1 = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
      bool ok1 = c == 0xF0 ? (c1 >= 0x90 && c1 <= 0xBF) : c == 0xF4 ? (c1 >= 0x80 && c1 <= 0x8F) : cont(i + 1);
      n = ok1 && cont(i + 2) && cont(i + 3) ? 4 : 0;
    }
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace slimkv
