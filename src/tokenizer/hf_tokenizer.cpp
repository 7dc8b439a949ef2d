// Hugging Face tokenizer.json (BPE model) -> BpeConfig. Supports the shapes small Llama-style and GPT-2-style models
// use: Prepend/Replace/NFC normalizers, ByteLevel/Split/Metaspace/Digits pre-tokenizers, ByteLevel/Replace/
// ByteFallback/Fuse/Strip/Metaspace decoders, TemplateProcessing/Roberta/Bert post-processors. Anything else is a
// clear Error. load_hf_tokenizer also reads a sibling tokenizer_config.json for bos/eos and add_bos/add_eos.
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/check.h"
#include "core/mapped_file.h"
#include "tokenizer/bpe_tokenizer.h"

namespace slimkv {
namespace {

using json = nlohmann::json;

struct Parse {
  explicit Parse(const std::string& w) : what(w) {}
  const std::string& what;
  BpeConfig c;
  bool has_post_processor = false;
  std::unordered_map<std::string, int32_t> ids;  // piece -> first id
  int64_t max_id = 0;  // ids must be below this: real files number their tokens densely

  void limit_ids(const json& root, const json& model) {
    const json* v = get(model, "vocab");
    const json* a = get(root, "added_tokens");
    size_t n = (v && v->is_object() ? v->size() : 0) + (a && a->is_array() ? a->size() : 0);
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
      place(static_cast<int32_t>(id), content, boolean(t, "special", false) ? kTokControl : kTokUserDefined, "added");
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
    if (t == "Sequence") {
      const json* list = get(n, "normalizers");
      SLIMKV_CHECK(list && list->is_array(), "{}: Sequence normalizer needs 'normalizers'", what);
      for (const json& e : *list) normalizer(e);
    } else if (t == "Prepend") {
      c.prepend += str(n, "prepend", "Prepend normalizer");
    } else if (t == "Replace") {
      std::string from = string_pattern(n, "the Replace normalizer");
      SLIMKV_CHECK(from == " " && c.space_replacement.empty(), "{}: only Replace \" \" is supported in normalizers",
                   what);
      c.space_replacement = str(n, "content", "Replace normalizer");
      std::string p;  // a replacement after Prepend applies to the prepended text too
      for (char ch : c.prepend) p += ch == ' ' ? c.space_replacement : std::string(1, ch);
      c.prepend = p;
    } else if (t != "NFC") {  // input is taken to be NFC already
      fail("{}: normalizer '{}' is not supported", what, t);
    }
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
      std::string behavior = get(p, "behavior") ? str(p, "behavior", "Split") : "Isolated";
      SLIMKV_CHECK(behavior == "Isolated" && !boolean(p, "invert", false),
                   "{}: Split pre_tokenizer behavior '{}' is not supported (only Isolated)", what, behavior);
      c.pretokenizer.push_back(pattern(p, "Split pre_tokenizer"));
    } else if (t == "Digits") {
      c.pretokenizer.push_back(boolean(p, "individual_digits", false) ? "\\p{N}" : "\\p{N}+");
    } else if (t == "Metaspace") {
      std::string r = str(p, "replacement", "Metaspace");
      c.space_replacement = r;
      std::string scheme = get(p, "prepend_scheme") ? str(p, "prepend_scheme", "Metaspace")
                                                    : boolean(p, "add_prefix_space", true) ? "always" : "never";
      if (scheme != "never") c.prepend = r;
      std::string q = "\\Q" + r + "\\E";  // each word starts at a marker: "(?:▁)?(?:(?!▁).)+|▁"
      if (boolean(p, "split", true)) c.pretokenizer.push_back("(?s)(?:" + q + ")?(?:(?!" + q + ").)+|" + q);
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
    } else if (t == "Replace") {
      SLIMKV_CHECK(str(d, "content", "Replace decoder") == " ", "{}: only Replace -> \" \" decoders are supported",
                   what);
      c.decode_space_marker = string_pattern(d, "the Replace decoder");
    } else if (t == "ByteFallback") {
      c.decode_byte_fallback = true;
    } else if (t == "Strip") {
      const json* start = get(d, "start");
      c.strip_leading_space = start && start->is_number_integer() && start->get<int64_t>() > 0;
    } else if (t == "Metaspace") {
      c.decode_space_marker = str(d, "replacement", "Metaspace decoder");
      std::string scheme = get(d, "prepend_scheme") ? str(d, "prepend_scheme", "Metaspace decoder")
                                                    : boolean(d, "add_prefix_space", true) ? "always" : "never";
      c.strip_leading_space = scheme != "never";
    } else if (t != "Fuse") {
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
    SLIMKV_CHECK(type == "BPE", "{}: tokenizer model '{}' is not supported (only BPE)", what, type);
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      const json* v = ps.get(*model, key);
      SLIMKV_CHECK(!v || (v->is_string() && v->get<std::string>().empty()), "{}: BPE '{}' is not supported", what,
                   key);
    }
    ps.limit_ids(root, *model);
    ps.vocab(*model);
    ps.added_tokens(root);
    for (size_t i = 0; i < c.pieces.size(); ++i) ps.ids.emplace(c.pieces[i], static_cast<int32_t>(i));
    ps.merges(*model);
    c.byte_level = c.decode_byte_level = false;
    c.byte_fallback = ps.boolean(*model, "byte_fallback", false);
    c.fuse_unk = ps.boolean(*model, "fuse_unk", false);
    c.ignore_merges = ps.boolean(*model, "ignore_merges", false);
    if (ps.get(*model, "unk_token")) c.unk_id = ps.id_of(ps.str(*model, "unk_token", "model"), "unk_token");
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
      if (!ps.has_post_processor && ps.boolean(*config, "add_bos_token", false) && c.bos_id >= 0) {
        c.prefix_ids = {c.bos_id};
      }
      if (!ps.has_post_processor && ps.boolean(*config, "add_eos_token", false) && c.eos_id >= 0) {
        c.suffix_ids = {c.eos_id};
      }
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
  std::string text = read_text_file(path);
  std::filesystem::path cfg_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(cfg_path, ec)) return build(text, path, nullptr);
  std::string cfg_text = read_text_file(cfg_path.string());
  json cfg = json::parse(cfg_text, nullptr, /*allow_exceptions=*/false);
  SLIMKV_CHECK(!cfg.is_discarded() && cfg.is_object(), "{}: not a valid JSON object", cfg_path.string());
  return build(text, path, &cfg);
}

}  // namespace slimkv
