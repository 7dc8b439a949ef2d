// Hugging Face reference ids and decodes for the HfModels tests, by @huggingface/tokenizers (tokenizers.js, pure JS):
//   mkdir /tmp/hfjs && cd /tmp/hfjs && npm install @huggingface/tokenizers@0.2.0
//   NODE_PATH=/tmp/hfjs/node_modules node gen_hf_models.mjs   (run from this folder, after gen_hf_models.py)
// tokenizers.js has no Unigram byte_fallback, so the Unigram reference runs with byte_fallback off (the test flips the
// flag the same way); SentencePiece's own ids (hf_models_strings.json) cover byte fallback.
import fs from "fs";
import { createRequire } from "module";
const require = createRequire(process.env.NODE_PATH ? process.env.NODE_PATH + "/" : import.meta.url);
const { Tokenizer } = require("@huggingface/tokenizers");
const main = require.resolve("@huggingface/tokenizers");
const version = JSON.parse(fs.readFileSync(main.slice(0, main.lastIndexOf("/dist/")) + "/package.json")).version;

const { strings } = JSON.parse(fs.readFileSync("hf_models_strings.json", "utf8"));
const variants = {
  unigram: fs.readFileSync("unigram.json", "utf8").replace('"byte_fallback": true', '"byte_fallback": false'),
  wordpiece_uncased: fs.readFileSync("wordpiece_uncased.json", "utf8"),
  wordpiece_cased: fs.readFileSync("wordpiece_cased.json", "utf8"),
};
const out = { tool: `@huggingface/tokenizers ${version} (node ${process.version})`, variants: {} };
for (const [name, text] of Object.entries(variants)) {
  const tok = new Tokenizer(JSON.parse(text), { clean_up_tokenization_spaces: false });
  const dec = (ids, skip) => (ids.length ? tok.decode(ids, { skip_special_tokens: skip }) : "");
  out.variants[name] = strings.map((s) => {
    const ids = tok.encode(s, { add_special_tokens: false }).ids;
    const with_special = tok.encode(s, { add_special_tokens: true }).ids;
    return { text: s, ids, ids_special: with_special, decoded: dec(with_special, true), decoded_all: dec(with_special, false) };
  });
}
fs.writeFileSync("hf_models_expected.json", JSON.stringify(out, null, 0).replace(/\{"text"/g, '\n{"text"'));
console.log(out.tool);
