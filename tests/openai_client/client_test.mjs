// The official `openai` npm client (v6) against a running `slimkv serve`: streaming and non-streaming completions
// and chat, and our errors surfaced as the client's own error classes. Usage: node client_test.mjs BASE_URL API_KEY
import assert from "node:assert/strict";
import OpenAI from "openai";

const [baseURL, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey, maxRetries: 0, timeout: 30000 });
let passed = 0;
async function check(name, fn) {
  await fn();
  passed++;
  console.log(`ok - ${name}`);
}

await check("models.list", async () => {
  const models = await client.models.list();
  assert.equal(models.data[0].id, "stories260K");
});

await check("completions (non-streaming)", async () => {
  const r = await client.completions.create({ model: "stories260K", prompt: "Once upon a time", max_tokens: 16, temperature: 0 });
  assert.equal(r.object, "text_completion");
  assert.ok(r.choices[0].text.startsWith(", there was a little girl named Lily"), r.choices[0].text);
  assert.equal(r.choices[0].finish_reason, "length");
  assert.equal(r.usage.completion_tokens, 16);
});

await check("completions (streaming)", async () => {
  const stream = await client.completions.create({
    model: "stories260K", prompt: "Once upon a time", max_tokens: 16, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  let text = "", tokens = 0, usage = null, finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason; else tokens++;
    }
  }
  assert.ok(text.startsWith(", there was a little girl named Lily"), text);
  assert.equal(finish, "length");
  assert.equal(tokens, 16);
  assert.equal(usage.completion_tokens, 16);
});

await check("chat.completions (non-streaming)", async () => {
  const r = await client.chat.completions.create({
    model: "stories260K", messages: [{ role: "user", content: "Tell me a story." }], max_completion_tokens: 12, temperature: 0,
  });
  assert.equal(r.object, "chat.completion");
  assert.equal(r.choices[0].message.role, "assistant");
  assert.equal(typeof r.choices[0].message.content, "string");
  assert.equal(r.usage.completion_tokens, 12);
});

await check("chat.completions (streaming)", async () => {
  const stream = await client.chat.completions.create({
    model: "stories260K", messages: [{ role: "user", content: "Tell me a story." }], max_tokens: 12, temperature: 0,
    stream: true, stream_options: { include_usage: true },
  });
  let text = "", role = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) role = c.delta.role;
      text += c.delta.content ?? "";
    }
  }
  assert.equal(role, "assistant");
  assert.ok(text.length > 0);
  assert.equal(usage.completion_tokens, 12);
});

await check("errors: BadRequestError with the context-length wording", async () => {
  await assert.rejects(
    client.completions.create({ model: "stories260K", prompt: "Once", max_tokens: 5000 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && /maximum context length is 512 tokens/.test(e.message),
  );
  await assert.rejects(
    client.chat.completions.create({ model: "stories260K", messages: [], max_tokens: 5 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "messages",
  );
});

await check("errors: AuthenticationError, NotFoundError", async () => {
  const wrong = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: "sk-wrong", maxRetries: 0 });
  await assert.rejects(
    wrong.completions.create({ model: "stories260K", prompt: "Once", max_tokens: 2 }),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401,
  );
  await assert.rejects(
    client.completions.create({ model: "no-such-model", prompt: "Once", max_tokens: 2 }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404,
  );
});

console.log(`${passed} checks passed`);
