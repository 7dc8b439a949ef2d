#!/usr/bin/python3
# Builds the small Unigram and WordPiece tokenizer.json files the HfModels tests load, the stress strings, and the
# SentencePiece reference ids for Unigram byte fallback. Run from this folder with Debian's python3-sentencepiece
# (0.1.97); then run gen_hf_models.mjs (@huggingface/tokenizers) for the Hugging Face reference ids.
#   /usr/bin/python3 gen_hf_models.py ../../../../shared/data && node gen_hf_models.mjs
import collections, io, json, re, sys, unicodedata
import sentencepiece as spm

data = sys.argv[1] if len(sys.argv) > 1 else "../../../../shared/data"
text = open(f"{data}/pg11_alice_in_wonderland.txt", encoding="utf-8").read()
text += open(f"{data}/pg1342_pride_and_prejudice.txt", encoding="utf-8").read()[:300000]
lines = [l.strip() for l in text.splitlines() if l.strip()]
lines += ["café naïve résumé Zürich São Paulo déjà vu", "coöperate façade jalapeño piñata"] * 20

# --- Unigram: a SentencePiece model, converted as transformers' SpmConverter does (Metaspace, byte fallback).
model = io.BytesIO()
spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model, model_type="unigram",
                               vocab_size=1200, byte_fallback=True, normalization_rule_name="identity",
                               character_coverage=0.9995, unk_id=0, bos_id=1, eos_id=2, pad_id=-1)
sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
vocab = [[sp.id_to_piece(i), sp.get_score(i) if not sp.is_control(i) and not sp.is_unknown(i) else 0.0]
         for i in range(sp.get_piece_size())]
def added(i, content):
    return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}
unigram = {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
    "normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Strip", "strip_left": False, "strip_right": True},
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "\u2581"}]},
    "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
    "post_processor": {"type": "TemplateProcessing",
                       "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                       "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 0}},
                                {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                       "special_tokens": {"</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}},
    "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
    "model": {"type": "Unigram", "unk_id": 0, "vocab": vocab, "byte_fallback": True},
}
json.dump(unigram, open("unigram.json", "w", encoding="utf-8"), ensure_ascii=False)

# --- WordPiece: a BERT-style vocabulary from the same text (words, then frequent word endings, then characters).
def bert_norm(s):
    s = unicodedata.normalize("NFD", s.lower())
    return "".join(c for c in s if unicodedata.category(c) != "Mn")
words = collections.Counter(re.findall(r"[^\W\d_]+|\d+", bert_norm(" ".join(lines))))
specials = ["[PAD]"] + [f"[unused{i}]" for i in range(5)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
chars = sorted(set("".join(words)) | set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~0123456789") | set("中文字日本語한국"))
pieces = specials + chars + ["##" + c for c in chars if c.isalnum()]
pieces += [w for w, _ in words.most_common(1800) if len(w) > 1]
endings = collections.Counter()
for w, n in words.items():
    for k in range(2, 6):
        if len(w) > k:
            endings["##" + w[-k:]] += n
        if len(w) > k + 1:
            endings["##" + w[1:1 + k]] += n // 4
pieces += [e for e, _ in endings.most_common(900)]
seen, vocab = set(), {}
for p in pieces:
    if p not in seen:
        seen.add(p)
        vocab[p] = len(vocab)
def bert(lowercase, post, max_chars):
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(vocab[t], t) for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": lowercase},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": post,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": max_chars, "vocab": vocab},
    }
cls, sep = vocab["[CLS]"], vocab["[SEP]"]
template = {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [cls], "tokens": ["[CLS]"]},
                               "[SEP]": {"id": "[SEP]", "ids": [sep], "tokens": ["[SEP]"]}}}
json.dump(bert(True, template, 100), open("wordpiece_uncased.json", "w", encoding="utf-8"), ensure_ascii=False)
bert_proc = {"type": "BertProcessing", "sep": ["[SEP]", sep], "cls": ["[CLS]", cls]}
json.dump(bert(False, bert_proc, 24), open("wordpiece_cased.json", "w", encoding="utf-8"), ensure_ascii=False)

# --- Stress strings (both models), and SentencePiece's ids for the byte-fallback cases (plain single-spaced text:
# there SentencePiece's own normalization and the tokenizer.json pipeline agree).
strings = [
    "Hello world", "hello, world!", "Alice was beginning to get very tired of sitting by her sister.",
    "  leading and trailing spaces  ", "multiple    spaces\tand\ttabs\nand\nnewlines", "",
    " ", "café naïve résumé", "CAFÉ NAÏVE RÉSUMÉ", "Zürich, São Paulo; déjà vu!", "Ångström ÅNGSTRÖM",
    "中文字 and 日本語", "你好世界", "한국어 텍스트", "emoji 😀 here 🎉🎉", "👨‍👩‍👧 family", "snowman ☃☃☃ x",
    "don't can't won't I'm you're we've", "It's 3.14159, not 42!", "e-mail: alice@example.com",
    "(parentheses) [brackets] {braces} <angles>", "#hashtag $dollar %percent ^caret &amp *star",
    "quotes “curly” ‘single’ «guillemets»", "dash – em — ellipsis…", "under_score snake_case_name",
    "CamelCaseWordsLikeThis", "supercalifragilisticexpialidocious", "antidisestablishmentarianism",
    "a" * 30, "b" * 120, "word" + "x" * 25, "unbelievable unbelievably believing",
    "hello [MASK] world", "[CLS] start [SEP] end", "text </s> with <s> tags <unk>", "[mask] lowercase",
    "ﬁ ligature ﬀ", "full－width ＡＢＣ１２３", "zero\u200bwidth\u200dspace", "control\u0007char\u0000nul",
    "soft\u00adhyphen", "İstanbul", "ΟΔΥΣΣΕΥΣ odysseus", "Привет, мир!", "مرحبا بالعالم", "שלום",
    "नमस्ते", "tab\tseparated\tvalues", "1234567890 00 0.5", "The Queen said: \"Off with her head!\"",
    "x", "?!", "...",
]
bytes_cases = ["emoji 😀 here", "snowman ☃ x", "中文 text", "Привет мир", "naïve café", "ﬁ ligature",
               "mixed 😀☃ run", "alice said 𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "tab", "plain words only"]
spm_cases = [{"text": s, "ids": sp.encode(s)} for s in bytes_cases]
json.dump({"strings": strings, "byte_fallback": spm_cases,
           "tool": f"sentencepiece {spm.__version__} (python3-sentencepiece)"},
          open("hf_models_strings.json", "w", encoding="utf-8"), ensure_ascii=False, indent=0)
print(len(unigram["model"]["vocab"]), "unigram pieces;", len(vocab), "wordpiece pieces")
