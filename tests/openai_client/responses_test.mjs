// The official `openai` npm client's Responses API (`client.responses.create`) against `slimkv serve`'s
// /v1/responses, on the random-weight model that carries Qwen3's real tokenizer and chat template (started by the
// GoogleTest ServerQwen3Chat.OpenAiResponsesClientTest): plain, streamed (typed events, the same text), a function
// tool round trip (function_call -> function_call_output), previous_response_id, and text.format json_schema
// validated by ajv. Usage: node responses_test.mjs BASE_URL API_KEY MODEL
import assert from "node:assert/strict";
import Ajv from "ajv";
import OpenAI from "openai";

import { checks } from "./check.mjs";

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey, maxRetries: 0, timeout: 120000 });
const ajv = new Ajv({ strict: false });
const { check, done } = checks("responses_test");

await check("responses.create: plain", async () => {
  const r = await client.responses.create({ model, input: "Hello", max_output_tokens: 8, temperature: 0 });
  assert.equal(r.object, "response");
  assert.match(r.id, /^resp_/);
  assert.ok(["completed", "incomplete"].includes(r.status), r.status);
  assert.equal(typeof r.output_text, "string");
  assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens <= 8);
});

await check("responses.create stream: typed events in order, the same text", async () => {
  const params = { model, input: "Tell me a story", instructions: "Be brief.", max_output_tokens: 10, temperature: 0 };
  const whole = await client.responses.create(params);
  const stream = await client.responses.create({ ...params, stream: true });
  const types = [];
  let text = "", last = -1, final = null;
  for await (const ev of stream) {
    types.push(ev.type);
    assert.ok(ev.sequence_number > last);
    last = ev.sequence_number;
    if (ev.type === "response.output_text.delta") text += ev.delta;
    if (ev.type === "response.completed" || ev.type === "response.incomplete") final = ev.response;
  }
  assert.equal(types[0], "response.created");
  assert.ok(["response.completed", "response.incomplete"].includes(types.at(-1)), types.at(-1));
  assert.equal(text, whole.output_text);
  assert.equal(final.usage.output_tokens, whole.usage.output_tokens);
});

const weather = {
  type: "function", name: "get_weather", description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string", maxLength: 12 } }, required: ["city"],
                additionalProperties: false },
};
await check("a function tool round trip: function_call, then function_call_output", async () => {
  const input = [{ role: "user", content: "What is the weather in Paris?" }];
  const r = await client.responses.create({
    model, input, tools: [weather], tool_choice: { type: "function", name: "get_weather" }, max_output_tokens: 80,
    temperature: 0,
  });
  const call = r.output.find((o) => o.type === "function_call");
  assert.ok(call, JSON.stringify(r.output));
  assert.equal(call.name, "get_weather");
  assert.ok(ajv.validate(weather.parameters, JSON.parse(call.arguments)), call.arguments);
  const r2 = await client.responses.create({
    model, tools: [weather], max_output_tokens: 6, temperature: 0,
    input: [...input, call, { type: "function_call_output", call_id: call.call_id, output: "sunny, 21 C" }],
  });
  assert.equal(r2.object, "response");
  assert.ok(r2.usage.input_tokens > r.usage.input_tokens);
});

await check("previous_response_id continues the stored conversation", async () => {
  const r1 = await client.responses.create({ model, input: "Hello there", max_output_tokens: 6, temperature: 0 });
  const r2 = await client.responses.create({ model, previous_response_id: r1.id, input: "And then?", max_output_tokens: 6,
                                             temperature: 0 });
  assert.equal(r2.previous_response_id, r1.id);
  assert.ok(r2.usage.input_tokens > r1.usage.input_tokens + r1.usage.output_tokens, JSON.stringify([r1.usage, r2.usage]));
  await assert.rejects(client.responses.create({ model, previous_response_id: "resp_unknown", input: "x" }),
                       (e) => e.status === 400);
});

await check("text.format json_schema: the output parses and validates (ajv)", async () => {
  const schema = { type: "object", properties: { name: { type: "string", maxLength: 16 }, age: { type: "integer" } },
                   required: ["name", "age"], additionalProperties: false };
  const r = await client.responses.create({
    model, input: "JSON please", max_output_tokens: 200, temperature: 0,
    text: { format: { type: "json_schema", name: "person", schema, strict: true } },
  });
  assert.equal(r.status, "completed", r.output_text);
  assert.ok(ajv.validate(schema, JSON.parse(r.output_text)), r.output_text);
});

done();
