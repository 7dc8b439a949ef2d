// The official `openai` npm client (v6) doing what agent frameworks do, against `slimkv serve` on a random-weight
// model that carries Qwen3's real tokenizer and chat template (tests/qwen3_chat_model.h; started by the GoogleTest
// ServerQwen3Chat.OpenAiClientAgentTest): a tool-call round trip (forced by tool_choice, streamed and not),
// reasoning_content in a stream (the output held to <think>…</think>… by guided_regex), and json_schema responses
// validated by ajv. Usage: node agent_test.mjs BASE_URL API_KEY MODEL
import assert from "node:assert/strict";
import Ajv from "ajv";
import OpenAI from "openai";

import { checks } from "./check.mjs";

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey, maxRetries: 0, timeout: 120000 });
const ajv = new Ajv({ strict: false });
const { check, done } = checks("agent_test");

const weather = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string", maxLength: 12 }, unit: { enum: ["celsius", "fahrenheit"] } },
      required: ["city", "unit"],
      additionalProperties: false,
    },
  },
};
const time = {
  type: "function",
  function: {
    name: "get_time",
    parameters: { type: "object", properties: { zone: { type: "string", maxLength: 8 } }, required: ["zone"] },
  },
};
const tools = [weather, time];
const validate_args = { get_weather: ajv.compile(weather.function.parameters), get_time: ajv.compile(time.function.parameters) };

await check("tool call, named tool_choice (non-streaming), then the tool result back through the template", async () => {
  const messages = [{ role: "user", content: "What is the weather in Paris?" }];
  const r = await client.chat.completions.create({
    model, messages, tools, tool_choice: { type: "function", function: { name: "get_weather" } },
    max_tokens: 80, temperature: 0.7, seed: 3,
  });
  const m = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, "tool_calls");
  assert.equal(m.content, null);
  assert.equal(m.tool_calls.length, 1);
  const call = m.tool_calls[0];
  assert.equal(call.type, "function");
  assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
  assert.equal(call.function.name, "get_weather");
  const args = JSON.parse(call.function.arguments);
  assert.ok(validate_args.get_weather(args), JSON.stringify(validate_args.get_weather.errors));
  // The round trip: the assistant's call and the tool's result go back in; the template renders both.
  messages.push(m, { role: "tool", tool_call_id: call.id, content: JSON.stringify({ temperature: 21, unit: args.unit }) });
  const r2 = await client.chat.completions.create({ model, messages, tools, max_tokens: 8, temperature: 0 });
  assert.equal(typeof r2.choices[0].message.content, "string");
  assert.ok(r2.usage.prompt_tokens > r.usage.prompt_tokens);
});

await check("a tool call, tool_choice required (streaming): id and name first, then the arguments", async () => {
  const stream = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Weather and time?" }], tools, tool_choice: "required",
    parallel_tool_calls: false, max_tokens: 400, temperature: 0.7, seed: 5, stream: true,
  });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      if (c.finish_reason) finish = c.finish_reason;
      for (const t of c.delta.tool_calls ?? []) {
        if (!calls[t.index]) {
          assert.ok(t.id && t.function?.name, `the first delta of call ${t.index} carries its id and name`);
          calls[t.index] = { id: t.id, name: t.function.name, arguments: t.function.arguments ?? "" };
        } else {
          assert.equal(t.id, undefined);
          calls[t.index].arguments += t.function?.arguments ?? "";
        }
      }
    }
  }
  assert.equal(finish, "tool_calls");
  assert.equal(calls.length, 1);  // parallel_tool_calls: false
  for (const c of calls) {
    assert.ok(c.name in validate_args, c.name);
    assert.ok(validate_args[c.name](JSON.parse(c.arguments)), JSON.stringify(validate_args[c.name].errors));
  }
});

await check("reasoning_content in a stream (Qwen3's <think> syntax)", async () => {
  const stream = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Think, then answer." }], max_tokens: 60, temperature: 0.8, seed: 7,
    stream: true, guided_regex: "<think>[a-z ]{3,40}</think>\n\n[a-z ]{3,20}",
  });
  let reasoning = "", content = "";
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      reasoning += c.delta.reasoning_content ?? "";
      content += c.delta.content ?? "";
    }
  }
  assert.match(reasoning, /^[a-z ]{3,40}$/);
  assert.ok(!content.includes("<think>") && !content.includes("</think>"), content);
  assert.match(content.trim(), /^[a-z ]*$/);
  const whole = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Think, then answer." }], max_tokens: 60, temperature: 0.8, seed: 7,
    guided_regex: "<think>[a-z ]{3,40}</think>\n\n[a-z ]{3,20}",
  });
  assert.equal(whole.choices[0].message.reasoning_content, reasoning);  // streamed == whole
  assert.equal(whole.choices[0].message.content, content);
});

const schemas = [
  { type: "object", properties: { name: { type: "string", maxLength: 16 }, age: { type: "integer" } },
    required: ["name", "age"], additionalProperties: false },
  { type: "object", properties: { items: { type: "array", items: { type: "number" }, minItems: 1, maxItems: 4 },
    ok: { type: "boolean" } }, required: ["items", "ok"] },
  { type: "object", properties: { kind: { enum: ["a", "b", "c"] }, note: { anyOf: [{ type: "null" }, { type: "string", maxLength: 8 }] } },
    required: ["kind", "note"] },
  { type: "object", properties: { user: { type: "object", properties: { id: { type: "integer" }, tags: { type: "array",
    items: { type: "string", maxLength: 6 }, maxItems: 3 } }, required: ["id", "tags"] } }, required: ["user"] },
];
await check(`response_format json_schema: ${schemas.length} schemas x 3 seeds parse and validate (ajv)`, async () => {
  for (const [i, schema] of schemas.entries()) {
    const validate = ajv.compile(schema);
    for (const seed of [1, 2, 3]) {
      const r = await client.chat.completions.create({
        model, messages: [{ role: "user", content: "JSON please" }], max_tokens: 200, temperature: 1.0, seed,
        response_format: { type: "json_schema", json_schema: { name: `s${i}`, schema, strict: true } },
      });
      assert.equal(r.choices[0].finish_reason, "stop", `schema ${i} seed ${seed}: ${r.choices[0].message.content}`);
      const value = JSON.parse(r.choices[0].message.content);
      assert.ok(validate(value), `schema ${i} seed ${seed}: ${JSON.stringify(validate.errors)} in ${r.choices[0].message.content}`);
    }
  }
});

// (json_object bounds no string, so a random-weight model runs to max_tokens inside one: its grammar is checked by
// tests/grammar's random walks instead.)

done();
