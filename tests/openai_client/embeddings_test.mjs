// The official `openai` npm client's embeddings.create against `slimkv serve --pooling mean`'s /v1/embeddings, on
// the random-weight model with Qwen3's real tokenizer (started by the GoogleTest ServerQwen3Chat.
// OpenAiEmbeddingsClientTest), each vector equal to `slimkv embed`'s direct computation (EXPECTED_JSON, made by
// the same test): the client's default base64 encoding, float, a batch of inputs, token-id inputs.
// Usage: node embeddings_test.mjs BASE_URL API_KEY MODEL EXPECTED_JSON
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import OpenAI from "openai";

import { checks } from "./check.mjs";

const [baseURL, apiKey, model, expectedPath] = process.argv.slice(2);
const expected = JSON.parse(readFileSync(expectedPath, "utf8"));  // {texts: [...], data: [{tokens, embedding}]}
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey, maxRetries: 0, timeout: 120000 });
const { check, done } = checks("embeddings_test");

function assertClose(got, want, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    assert.ok(Math.abs(got[i] - want[i]) <= 1e-5, `${what}[${i}]: ${got[i]} vs ${want[i]}`);
  }
}

await check("embeddings.create: one text (the client's default base64), equal to slimkv embed", async () => {
  const r = await client.embeddings.create({ model, input: expected.texts[0] });
  assert.equal(r.object, "list");
  assert.equal(r.model, model);
  assert.equal(r.data.length, 1);
  assert.equal(r.data[0].object, "embedding");
  assertClose(r.data[0].embedding, expected.data[0].embedding, "text 0");
  assert.equal(r.usage.prompt_tokens, expected.data[0].tokens);
});

await check("embeddings.create: a batch as floats, in input order", async () => {
  const r = await client.embeddings.create({ model, input: expected.texts, encoding_format: "float" });
  assert.equal(r.data.length, expected.texts.length);
  r.data.forEach((d, i) => {
    assert.equal(d.index, i);
    assertClose(d.embedding, expected.data[i].embedding, `text ${i}`);
  });
  const tokens = expected.data.reduce((s, d) => s + d.tokens, 0);
  assert.equal(r.usage.prompt_tokens, tokens);
  assert.equal(r.usage.total_tokens, tokens);
});

await check("embeddings.create: a bad request is a 400 naming the field", async () => {
  await assert.rejects(client.embeddings.create({ model, input: [] }), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.error?.param ?? e.param, "input");
    return true;
  });
});

done();
