// The official `@anthropic-ai/sdk` npm client against `slimkv serve`'s /v1/messages, on the random-weight model that
// carries Qwen3's real tokenizer and chat template (started by the GoogleTest ServerQwen3Chat.AnthropicClientTest):
// a plain message, the same streamed (events and the SDK's final message), and a tool_use / tool_result round trip
// forced by tool_choice, streamed and not. Usage: node anthropic_test.mjs BASE_URL API_KEY MODEL
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";

import { checks } from "./check.mjs";

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new Anthropic({ baseURL, apiKey, maxRetries: 0, timeout: 120000 });
const { check, done } = checks("anthropic_test");

const weather = {
  name: "get_weather",
  description: "The weather in a city",
  input_schema: { type: "object", properties: { city: { type: "string", maxLength: 12 } }, required: ["city"] },
};

await check("messages.create: a plain message", async () => {
  const r = await client.messages.create({
    model, max_tokens: 6, temperature: 0, system: "Be brief.", messages: [{ role: "user", content: "Hello" }],
  });
  assert.equal(r.type, "message");
  assert.equal(r.role, "assistant");
  assert.ok(Array.isArray(r.content));
  assert.ok(["end_turn", "max_tokens"].includes(r.stop_reason), r.stop_reason);
  assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens <= 6);
});

await check("messages.stream: events in order, the final message equal to the non-streamed one", async () => {
  const params = { model, max_tokens: 6, temperature: 0, messages: [{ role: "user", content: "Hello" }] };
  const plain = await client.messages.create(params);
  const stream = client.messages.stream(params);
  const types = [];
  for await (const ev of stream) types.push(ev.type);
  const final = await stream.finalMessage();
  assert.equal(types[0], "message_start");
  assert.equal(types.at(-1), "message_stop");
  assert.equal(types.at(-2), "message_delta");
  assert.deepEqual(final.content, plain.content);
  assert.equal(final.stop_reason, plain.stop_reason);
  assert.equal(final.usage.output_tokens, plain.usage.output_tokens);
});

await check("tool_use forced by tool_choice, then tool_result back through the template", async () => {
  const messages = [{ role: "user", content: "What is the weather in Paris?" }];
  const r = await client.messages.create({
    model, max_tokens: 48, temperature: 0, messages, tools: [weather], tool_choice: { type: "tool", name: "get_weather" },
  });
  assert.equal(r.stop_reason, "tool_use");
  const use = r.content.find((b) => b.type === "tool_use");
  assert.ok(use, JSON.stringify(r.content));
  assert.equal(use.name, "get_weather");
  assert.equal(typeof use.input.city, "string");
  const next = await client.messages.create({
    model, max_tokens: 4, temperature: 0, tools: [weather],
    messages: [...messages, { role: "assistant", content: r.content },
               { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny, 21 C" }] }],
  });
  assert.equal(next.type, "message");
  assert.ok(next.usage.input_tokens > r.usage.input_tokens);
});

await check("tool_use streamed: input_json_delta events build the same input", async () => {
  const params = { model, max_tokens: 48, temperature: 0, tools: [weather], tool_choice: { type: "tool", name: "get_weather" },
                   messages: [{ role: "user", content: "What is the weather in Oslo?" }] };
  const plain = await client.messages.create(params);
  const final = await client.messages.stream(params).finalMessage();
  const a = plain.content.find((b) => b.type === "tool_use"), b = final.content.find((b) => b.type === "tool_use");
  assert.ok(a && b);
  assert.deepEqual(b.input, a.input);
  assert.equal(final.stop_reason, "tool_use");
});

done();
