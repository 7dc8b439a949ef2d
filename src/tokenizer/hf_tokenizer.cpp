// Hugging Face tokenizer.json (BPE, Unigram or WordPiece model) -> BpeConfig (with a WordModel for the last two).
// Supports the shapes small Llama-, GPT-2-, T5- and BERT-style models use: Prepend/Replace/NFC/Bert normalizers,
// ByteLevel/Split/Metaspace/Digits/Bert pre-tokenizers, ByteLevel/Replace/ByteFallback/Fuse/Strip/Metaspace/
// WordPiece decoders, TemplateProcessing/Roberta/Bert post-processors. Anything else is a clear Error.
// load_hf_tokenizer also reads a sibling tokenizer_config.json for bos/eos and add_bos/add_eos.
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/check.h"
#include "core/mapped_file.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/hf_model_json.h"

namespace slimkv {
namespace {

using json = nlohmann::json;

struct Parse {
  explicit Parse(const std::string& w) : what(w) {}
  const std::string& what;
  BpeConfig c;
  bool has_post_processor = false;
  UnigramVocab unigram_vocab;  // read by unigram(); its model is built once the added tokens are known
  std::unordered_map<std::string, int32_t> ids;  // piece -> first id
  int64_t max_id = 0;  // ids must be below this: real files number their tokens densely

  void limit_ids(const json& root, const json& model) {
    const json* v = get(model, "vocab");
    const json* a = get(root, "added_tokens");
    size_t n = (v && (v->is_object() || v->is_array()) ? v->size() : 0) + (a && a->is_array() ? a->size() : 0);
    max_id = std::min<int64_t>(2 * static_cast<int64_t>(n) + 1024, int64_t{1} << 24);
  }

  const json* get(const json& j, const char* key) const {
    if (!j.is_object()) return nullptr;
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  }
  std::string str(const json& j, const char* key, const char* where) const {
    const json* v = get(j, key);
    SLIMKV_CHECK(v && v->is_string(), "{}: {} needs a string '{}'", what, where, key);
    return v->get<std::string>();
  }
  bool boolean(const json& j, const char* key, bool fallback) const {
    const json* v = get(j, key);
    if (!v) return fallback;
    SLIMKV_CHECK(v->is_boolean(), "{}: '{}' must be true or false", what, key);
    return v->get<bool>();
  }
  std::string type_of(const json& j, const char* where) const {
    SLIMKV_CHECK(j.is_object(), "{}: {} must be an object", what, where);
    return str(j, "type", where);
  }
  // A pattern {"String": s} or {"Regex": r} as a PCRE2 regex.
  std::string pattern(const json& j, const char* where) const {
    const json* p = get(j, "pattern");
    SLIMKV_CHECK(p && p->is_object(), "{}: {} needs a 'pattern' object", what, where);
    if (const json* s = get(*p, "String")) {
      SLIMKV_CHECK(s->is_string(), "{}: {} pattern String must be a string", what, where);
      return "\\Q" + s->get<std::string>() + "\\E";
    }
    const json* r = get(*p, "Regex");
    SLIMKV_CHECK(r && r->is_string(), "{}: {} pattern must be a String or a Regex", what, where);
    return r->get<std::string>();
  }
  std::string string_pattern(const json& j, const char* where) const {
    const json* p = get(j, "pattern");
    const json* s = p ? get(*p, "String") : nullptr;
    SLIMKV_CHECK(s && s->is_string(), "{}: only String patterns are supported in {}", what, where);
    return s->get<std::string>();
  }
  int32_t id_of(const std::string& piece, const char* role) const {
    auto it = ids.find(piece);
    SLIMKV_CHECK(it != ids.end(), "{}: {} '{}' is not in the vocabulary", what, role, piece);
    return it->second;
  }

  void vocab(const json& model) {
    const json* v = get(model, "vocab");
    SLIMKV_CHECK(v && v->is_object() && !v->empty(), "{}: model.vocab must be a non-empty object", what);
    for (auto it = v->begin(); it != v->end(); ++it) {
      SLIMKV_CHECK(it.value().is_number_integer(), "{}: vocab entry '{}' has no integer id", what, it.key());
      int64_t id = it.value().get<int64_t>();
      SLIMKV_CHECK(id >= 0 && id < max_id, "{}: vocab entry '{}' has id {} (out of range)", what, it.key(), id);
      place(static_cast<int32_t>(id), it.key(), kTokNormal, "vocab");
    }
  }
  void unigram(const json& model) {  // the pieces, numbered in order
    unigram_vocab = unigram_vocab_from_json(model, what);
    for (size_t i = 0; i < unigram_vocab.pieces.size(); ++i) {
      place(static_cast<int32_t>(i), unigram_vocab.pieces[i], kTokNormal, "vocab");
    }
    c.unk_id = unigram_vocab.unk_id;
  }
  void place(int32_t id, const std::string& piece, int32_t type, const char* where) {
    if (static_cast<size_t>(id) >= c.pieces.size()) {
      c.pieces.resize(id + 1);
      c.types.resize(id + 1, kTokUnused);  // holes decode to nothing
    }
    SLIMKV_CHECK(c.types[id] == kTokUnused || (where[0] == 'a' && c.pieces[id] == piece),
                 "{}: id {} is used twice ('{}' and '{}')", what, id, c.pieces[id], piece);
    c.pieces[id] = piece;
    c.types[id] = type;
  }
  void added_tokens(const json& root) {
    const json* a = get(root, "added_tokens");
    if (!a) return;
    SLIMKV_CHECK(a->is_array(), "{}: added_tokens must be an array", what);
    for (const json& t : *a) {
      SLIMKV_CHECK(t.is_object() && get(t, "id") && t["id"].is_number_integer(), "{}: added token without an id",
                   what);
      int64_t id = t["id"].get<int64_t>();
      SLIMKV_CHECK(id >= 0 && id < max_id, "{}: added token id {} is out of range", what, id);
      std::string content = str(t, "content", "added token");
      const bool special = boolean(t, "special", false);
      place(static_cast<int32_t>(id), content, special ? kTokControl : kTokUserDefined, "added");
      c.added.push_back({static_cast<int32_t>(id), content, special, boolean(t, "normalized", !special),
                         boolean(t, "lstrip", false), boolean(t, "rstrip", false), boolean(t, "single_word", false)});
    }
  }
  void merges(const json& model) {
    const json* m = get(model, "merges");
    if (!m) return;
    SLIMKV_CHECK(m->is_array(), "{}: model.merges must be an array", what);
    c.merges.reserve(m->size());
    for (size_t i = 0; i < m->size(); ++i) {
      const json& e = (*m)[i];
      if (e.is_string()) {
        const std::string& s = e.get_ref<const std::string&>();
        size_t sp = s.find(' ', 1);
        SLIMKV_CHECK(sp != std::string::npos && sp + 1 < s.size(), "{}: merge {} '{}' is not 'a b'", what, i, s);
        c.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else {
        SLIMKV_CHECK(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string(),
                     "{}: merge {} is neither 'a b' nor [a, b]", what, i);
        c.merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
      }
    }
  }

  void normalizer(const json& n) {
    std::string t = type_of(n, "normalizer");
    using K = NormalizeStep;
    if (t == "Sequence") {
      const json* list = get(n, "normalizers");
      SLIMKV_CHECK(list && list->is_array(), "{}: Sequence normalizer needs 'normalizers'", what);
      for (const json& e : *list) normalizer(e);
    } else if (t == "Prepend") {
      c.normalizer.push_back({K::kPrepend, "", false, str(n, "prepend", "Prepend normalizer")});
    } else if (t == "Replace") {
      auto [pat, regex] = any_pattern(n, "the Replace normalizer");
      c.normalizer.push_back({K::kReplace, pat, regex, str(n, "content", "Replace normalizer")});
    } else if (t == "NFC" || t == "NFD" || t == "NFKC" || t == "NFKD" || t == "Lowercase") {
      K::Kind k = t == "NFC" ? K::kNfc : t == "NFD" ? K::kNfd : t == "NFKC" ? K::kNfkc : t == "NFKD" ? K::kNfkd
                                                                                          : K::kLowercase;
      c.normalizer.push_back({k});
    } else if (t == "Strip") {
      NormalizeStep st{K::kStrip};
      st.strip_left = boolean(n, "strip_left", true);
      st.strip_right = boolean(n, "strip_right", true);
      c.normalizer.push_back(st);
    } else if (t == "BertNormalizer") {  // HF's order: clean, CJK, accents (default: as lowercase), lowercase
      const bool lower = boolean(n, "lowercase", true);
      if (boolean(n, "clean_text", true)) c.normalizer.push_back({K::kCleanText});
      if (boolean(n, "handle_chinese_chars", true)) c.normalizer.push_back({K::kSpaceCjk});
      if (boolean(n, "strip_accents", lower)) c.normalizer.insert(c.normalizer.end(), {{K::kNfd}, {K::kStripAccents}});
      if (lower) c.normalizer.push_back({K::kLowercase});
    } else if (t == "StripAccents") {
      c.normalizer.push_back({K::kStripAccents});
    } else {
      fail("{}: normalizer '{}' is not supported (supported: Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Strip, "
           "Replace, Prepend, BertNormalizer, StripAccents)", what, t);
    }
  }
  // A pattern {"String": s} (literal) or {"Regex": r}: (text, is_regex).
  std::pair<std::string, bool> any_pattern(const json& j, const char* where) const {
    const json* p = get(j, "pattern");
    SLIMKV_CHECK(p && p->is_object(), "{}: {} needs a 'pattern' object", what, where);
    if (const json* s = get(*p, "String")) {
      SLIMKV_CHECK(s->is_string(), "{}: {} pattern String must be a string", what, where);
      return {s->get<std::string>(), false};
    }
    const json* r = get(*p, "Regex");
    SLIMKV_CHECK(r && r->is_string(), "{}: {} pattern must be a String or a Regex", what, where);
    return {r->get<std::string>(), true};
  }
  SplitBehavior behavior(const json& p) const {
    const std::string b = get(p, "behavior") ? str(p, "behavior", "Split") : "Isolated";
    if (b == "Removed") return SplitBehavior::kRemoved;
    if (b == "Isolated") return SplitBehavior::kIsolated;
    if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
    if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
    if (b == "Contiguous") return SplitBehavior::kContiguous;
    fail("{}: Split behavior '{}' is unknown", what, b);
  }
  void pre_tokenizer(const json& p) {
    std::string t = type_of(p, "pre_tokenizer");
    if (t == "Sequence") {
      const json* list = get(p, "pretokenizers");
      SLIMKV_CHECK(list && list->is_array(), "{}: Sequence pre_tokenizer needs 'pretokenizers'", what);
      for (const json& e : *list) pre_tokenizer(e);
    } else if (t == "ByteLevel") {
      c.byte_level = true;
      c.add_prefix_space = boolean(p, "add_prefix_space", false);
      if (boolean(p, "use_regex", true)) c.pretokenizer.push_back(gpt2_pretokenizer_pattern());
    } else if (t == "Split") {
      c.pretokenizer.push_back({pattern(p, "Split pre_tokenizer"), behavior(p), boolean(p, "invert", false)});
    } else if (t == "Digits") {
      c.pretokenizer.push_back({"\\p{N}", boolean(p, "individual_digits", false) ? SplitBehavior::kIsolated
                                                                                : SplitBehavior::kContiguous});
    } else if (t == "Whitespace") {
      c.pretokenizer.push_back({"\\w+|[^\\w\\s]+", SplitBehavior::kRemoved, /*invert=*/true});
    } else if (t == "WhitespaceSplit") {
      c.pretokenizer.push_back({"\\s+", SplitBehavior::kRemoved});
    } else if (t == "BertPreTokenizer") {  // whitespace removed, then each punctuation character isolated
      c.pretokenizer.push_back({"[\\s\\x{85}]+", SplitBehavior::kRemoved});
      c.pretokenizer.push_back({"[\\p{P}!-/:-@\\[-`{-~]", SplitBehavior::kIsolated});
    } else if (t == "Punctuation") {
      c.pretokenizer.push_back({"\\p{P}", behavior(p)});
    } else if (t == "Metaspace") {
      c.metaspace = str(p, "replacement", "Metaspace");
      std::string scheme = get(p, "prepend_scheme") ? str(p, "prepend_scheme", "Metaspace")
                                                    : boolean(p, "add_prefix_space", true) ? "always" : "never";
      using P = BpeConfig::Prepend;
      c.metaspace_prepend = scheme == "first" ? P::kFirst : scheme == "never" ? P::kNever : P::kAlways;
      if (boolean(p, "split", true)) {
        c.pretokenizer.push_back({"\\Q" + c.metaspace + "\\E", SplitBehavior::kMergedWithNext});
      }
    } else {
      fail("{}: pre_tokenizer '{}' is not supported", what, t);
    }
  }
  void decoder(const json& d) {
    std::string t = type_of(d, "decoder");
    if (t == "Sequence") {
      const json* list = get(d, "decoders");
      SLIMKV_CHECK(list && list->is_array(), "{}: Sequence decoder needs 'decoders'", what);
      for (const json& e : *list) decoder(e);
    } else if (t == "ByteLevel") {
      c.decode_byte_level = true;
      c.decoders.push_back({DecodeStep::kByteLevel});
    } else if (t == "Replace") {
      std::string content = str(d, "content", "Replace decoder");
      std::string from = string_pattern(d, "the Replace decoder");
      if (content == " ") c.decode_space_marker = from;  // the per-token decode knows only this replacement
      c.decoders.push_back({DecodeStep::kReplace, from, content});
    } else if (t == "ByteFallback") {
      c.decode_byte_fallback = true;
      c.decoders.push_back({DecodeStep::kByteFallback});
    } else if (t == "Strip") {
      auto count = [&](const char* key) {
        const json* v = get(d, key);
        return v && v->is_number_integer() ? static_cast<int>(std::clamp<int64_t>(v->get<int64_t>(), 0, 1 << 20)) : 0;
      };
      DecodeStep st{DecodeStep::kStrip, "", get(d, "content") ? str(d, "content", "Strip decoder") : " "};
      st.start = count("start");
      st.stop = count("stop");
      c.strip_leading_space = st.start > 0 && st.content == " ";
      c.decoders.push_back(st);
    } else if (t == "Metaspace") {
      c.decode_space_marker = str(d, "replacement", "Metaspace decoder");
      std::string scheme = get(d, "prepend_scheme") ? str(d, "prepend_scheme", "Metaspace decoder")
                                                    : boolean(d, "add_prefix_space", true) ? "always" : "never";
      c.strip_leading_space = scheme != "never";
      DecodeStep st{DecodeStep::kMetaspace, c.decode_space_marker};
      st.prepend = scheme != "never";
      c.decoders.push_back(st);
    } else if (t == "WordPiece") {
      DecodeStep st{DecodeStep::kWordPiece, get(d, "prefix") ? str(d, "prefix", "WordPiece decoder") : "##"};
      st.cleanup = boolean(d, "cleanup", true);
      c.decode_subword_prefix = st.pattern;
      c.decode_cleanup = st.cleanup;
      c.decoders.push_back(st);
    } else if (t == "Fuse") {
      c.decoders.push_back({DecodeStep::kFuse});
    } else {
      fail("{}: decoder '{}' is not supported", what, t);
    }
  }
  void post_processor(const json& p) {
    std::string t = type_of(p, "post_processor");
    has_post_processor = true;
    if (t == "Sequence") {
      const json* list = get(p, "processors");
      SLIMKV_CHECK(list && list->is_array(), "{}: Sequence post_processor needs 'processors'", what);
      for (const json& e : *list) post_processor(e);
    } else if (t == "TemplateProcessing") {
      const json* single = get(p, "single");
      SLIMKV_CHECK(single && single->is_array(), "{}: TemplateProcessing needs 'single'", what);
      const json* specials = get(p, "special_tokens");
      c.prefix_ids.clear();
      c.suffix_ids.clear();
      bool after = false;
      for (const json& item : *single) {
        if (get(item, "Sequence")) {
          after = true;
          continue;
        }
        const json* st = get(item, "SpecialToken");
        SLIMKV_CHECK(st, "{}: TemplateProcessing item is neither Sequence nor SpecialToken", what);
        std::string name = str(*st, "id", "SpecialToken");
        const json* entry = specials ? get(*specials, name.c_str()) : nullptr;
        const json* list = entry ? get(*entry, "ids") : nullptr;
        SLIMKV_CHECK(list && list->is_array(), "{}: special token '{}' has no ids in special_tokens", what, name);
        for (const json& id : *list) {
          SLIMKV_CHECK(id.is_number_integer(), "{}: special token '{}' has a non-integer id", what, name);
          (after ? c.suffix_ids : c.prefix_ids).push_back(static_cast<int32_t>(id.get<int64_t>()));
        }
      }
    } else if (t == "RobertaProcessing" || t == "BertProcessing") {
      auto id = [&](const char* key) {
        const json* e = get(p, key);
        SLIMKV_CHECK(e && e->is_array() && e->size() == 2 && (*e)[1].is_number_integer(), "{}: {} needs '{}'",
                     what, t, key);
        return static_cast<int32_t>((*e)[1].get<int64_t>());
      };
      c.prefix_ids = {id("cls")};
      c.suffix_ids = {id("sep")};
    } else if (t != "ByteLevel") {
      fail("{}: post_processor '{}' is not supported", what, t);
    }
  }

  int32_t find_special(std::initializer_list<const char*> names, const char* contains) const {
    for (const char* n : names) {
      auto it = ids.find(n);
      if (it != ids.end()) return it->second;
    }
    for (size_t i = 0; contains && i < c.pieces.size(); ++i) {
      if (c.types[i] == kTokControl && c.pieces[i].find(contains) != std::string::npos) return static_cast<int32_t>(i);
    }
    return -1;
  }
};

std::unique_ptr<Tokenizer> build(std::string_view json_text, const std::string& what, const json* config) {
  json root = json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  SLIMKV_CHECK(!root.is_discarded(), "{}: not valid JSON (truncated or not a tokenizer.json?)", what);
  SLIMKV_CHECK(root.is_object(), "{}: a tokenizer.json must be a JSON object", what);
  try {
    Parse ps(what);
    BpeConfig& c = ps.c;
    const json* model = ps.get(root, "model");
    SLIMKV_CHECK(model && model->is_object(), "{}: no 'model' object (not a tokenizer.json?)", what);
    std::string type = ps.get(*model, "type") ? ps.str(*model, "type", "model") : "BPE";
    const bool bpe = type == "BPE";
    SLIMKV_CHECK(bpe || type == "Unigram" || type == "WordPiece",
                 "{}: tokenizer model '{}' is not supported (BPE, Unigram or WordPiece)", what, type);
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      const json* v = bpe ? ps.get(*model, key) : nullptr;
      SLIMKV_CHECK(!v || (v->is_string() && v->get<std::string>().empty()), "{}: BPE '{}' is not supported", what,
                   key);
    }
    ps.limit_ids(root, *model);
    if (type == "Unigram") ps.unigram(*model);
    else ps.vocab(*model);
    ps.added_tokens(root);
    for (size_t i = 0; i < c.pieces.size(); ++i) ps.ids.emplace(c.pieces[i], static_cast<int32_t>(i));
    c.byte_level = c.decode_byte_level = false;
    if (type == "Unigram") c.word_model = unigram_model(std::move(ps.unigram_vocab), c.added);
    if (type == "WordPiece") {
      WordPieceVocab w = wordpiece_vocab_from_json(*model, what);
      c.unk_id = w.unk_id;
      c.word_model = wordpiece_model(std::move(w), c.added);
    }
    if (bpe) {
      ps.merges(*model);
      c.byte_fallback = ps.boolean(*model, "byte_fallback", false);
      c.fuse_unk = ps.boolean(*model, "fuse_unk", false);
      c.ignore_merges = ps.boolean(*model, "ignore_merges", false);
      if (ps.get(*model, "unk_token")) c.unk_id = ps.id_of(ps.str(*model, "unk_token", "model"), "unk_token");
    }
    if (const json* n = ps.get(root, "normalizer")) ps.normalizer(*n);
    if (const json* p = ps.get(root, "pre_tokenizer")) ps.pre_tokenizer(*p);
    if (const json* d = ps.get(root, "decoder")) ps.decoder(*d);
    if (const json* p = ps.get(root, "post_processor")) ps.post_processor(*p);

    c.bos_id = c.prefix_ids.empty()
                   ? ps.find_special({"<s>", "<|begin_of_text|>", "<bos>", "<|startoftext|>"}, nullptr)
                   : c.prefix_ids.front();
    c.eos_id =
        ps.find_special({"</s>", "<|endoftext|>", "<|end_of_text|>", "<|im_end|>", "<|eot_id|>", "<eos>"}, "end");
    if (config) {  // tokenizer_config.json: explicit names win; add_* only where no post_processor says otherwise
      auto token_name = [&](const char* key) -> std::optional<std::string> {
        const json* v = ps.get(*config, key);
        if (v && v->is_string()) return v->get<std::string>();
        if (v && v->is_object() && ps.get(*v, "content")) return ps.str(*v, "content", key);
        return std::nullopt;
      };
      if (auto b = token_name("bos_token")) c.bos_id = ps.id_of(*b, "bos_token");
      if (auto e = token_name("eos_token")) c.eos_id = ps.id_of(*e, "eos_token");
      // transformers' Llama / Gemma / CodeLlama tokenizer classes rebuild the post-processor from add_bos_token
      // (default true) and add_eos_token (update_post_processor), whatever tokenizer.json says.
      const json* cls = ps.get(*config, "tokenizer_class");
      const std::string klass = cls && cls->is_string() ? cls->get<std::string>() : "";
      const bool rebuilds = klass.rfind("LlamaTokenizer", 0) == 0 || klass.rfind("GemmaTokenizer", 0) == 0 ||
                            klass.rfind("CodeLlamaTokenizer", 0) == 0;
      if (rebuilds || !ps.has_post_processor) {
        const bool bos = ps.boolean(*config, "add_bos_token", rebuilds), eos = ps.boolean(*config, "add_eos_token", false);
        if (rebuilds || bos) c.prefix_ids = bos && c.bos_id >= 0 ? std::vector<int32_t>{c.bos_id} : std::vector<int32_t>{};
        if (rebuilds || eos) c.suffix_ids = eos && c.eos_id >= 0 ? std::vector<int32_t>{c.eos_id} : std::vector<int32_t>{};
      }
      c.clean_up_spaces = ps.boolean(*config, "clean_up_tokenization_spaces", false);
    }
    return std::make_unique<BpeTokenizer>(std::move(c));
  } catch (const json::exception& e) {
    fail("{}: unexpected tokenizer.json structure: {}", what, e.what());
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind(what, 0) == 0) throw;
    fail("{}: {}", what, msg);
  }
}

}  // namespace

std::unique_ptr<Tokenizer> hf_tokenizer_from_json(std::string_view json_text, const std::string& what) {
  return build(json_text, what, nullptr);
}

std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path file = path;
  if (fs::is_directory(file, ec)) {  // a model folder: its tokenizer.json (or the gzipped copy)
    file = fs::path(path) / "tokenizer.json";
    if (!fs::is_regular_file(file, ec) && fs::is_regular_file(fs::path(path) / "tokenizer.json.gz", ec)) {
      file = fs::path(path) / "tokenizer.json.gz";
    }
  }
  std::string text = read_maybe_gzip_file(file.string());
  fs::path cfg_path = file.parent_path() / "tokenizer_config.json";
  if (!fs::is_regular_file(cfg_path, ec)) return build(text, file.string(), nullptr);
  std::string cfg_text = read_text_file(cfg_path.string());
  json cfg = json::parse(cfg_text, nullptr, /*allow_exceptions=*/false);
  SLIMKV_CHECK(!cfg.is_discarded() && cfg.is_object(), "{}: not a valid JSON object", cfg_path.string());
  return build(text, file.string(), &cfg);
}

}  // namespace slimkv
