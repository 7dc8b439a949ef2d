// The chat path's other encodings. Anthropic's Messages API: the request rewritten as a chat body (every block
// kind, tools and tool_choice, refusals naming the field), a chat completion as a `message`, a chat stream's chunks
// as Messages events in Anthropic's order. OpenAI's Responses API: input items and previous_response_id as chat
// messages, a chat completion as a Response, a chat stream as the typed events.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/anthropic_request.h"
#include "server/anthropic_response.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/response_store.h"
#include "server/responses_request.h"
#include "server/responses_response.h"

namespace slimkv {
namespace {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

TEST(AnthropicMessages, ARequestBecomesTheChatRequestItMeans) {
  const ojson body = ojson::parse(R"({
    "model": "m", "max_tokens": 64, "system": [{"type": "text", "text": "Be brief."}],
    "stop_sequences": ["END"], "temperature": 0.5, "top_k": 4,
    "tools": [{"name": "get_weather", "description": "Weather", "input_schema": {"type": "object",
              "properties": {"city": {"type": "string"}}, "required": ["city"]}}],
    "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
    "thinking": {"type": "disabled"},
    "messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": "use the tool", "signature": "x"},
                                        {"type": "tool_use", "id": "call_1", "name": "get_weather",
                                         "input": {"city": "Paris"}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
                                    "content": [{"type": "text", "text": "sunny"}]},
                                   {"type": "text", "text": "And tomorrow?"}]}]})");
  const ojson chat = messages_to_chat_body(body);
  EXPECT_EQ(chat["max_tokens"], 64);
  EXPECT_EQ(chat["stop"], ojson::array({"END"}));
  EXPECT_EQ(chat["tool_choice"], "required");
  EXPECT_EQ(chat["parallel_tool_calls"], false);
  EXPECT_EQ(chat["chat_template_kwargs"]["enable_thinking"], false);
  EXPECT_EQ(chat["tools"][0]["function"]["parameters"]["required"][0], "city");
  const ojson& m = chat["messages"];
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0], ojson({{"role", "system"}, {"content", "Be brief."}}));
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(ojson::parse(m[2]["tool_calls"][0]["function"]["arguments"].get<std::string>())["city"], "Paris");
  EXPECT_EQ(m[2]["reasoning_content"], "use the tool");
  EXPECT_EQ(m[3], ojson({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}}));
  EXPECT_EQ(m[4], ojson({{"role", "user"}, {"content", "And tomorrow?"}}));
  // The chat path accepts what it was given (its own checks: roles, tool_calls, tools, tool_choice).
  const GenerationRequest g = parse_chat_request(chat, JsonLimits{});
  EXPECT_EQ(g.messages.size(), 5u);
  EXPECT_EQ(g.tools.choice, ToolRequest::Choice::kRequired);
  EXPECT_FALSE(g.tools.parallel);
  EXPECT_EQ(g.stop, std::vector<std::string>{"END"});
}

TEST(AnthropicMessages, BadRequestsAre400sNamingTheField) {
  auto param_of = [](const char* text) -> std::string {
    try {
      messages_to_chat_body(ojson::parse(text));
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400) << text;
      return e.param;
    }
    return "(accepted)";
  };
  EXPECT_EQ(param_of(R"({"messages": [{"role": "user", "content": "hi"}]})"), "max_tokens");
  EXPECT_EQ(param_of(R"({"max_tokens": 0, "messages": [{"role": "user", "content": "hi"}]})"), "max_tokens");
  EXPECT_EQ(param_of(R"({"max_tokens": 8, "messages": []})"), "messages");
  EXPECT_EQ(param_of(R"({"max_tokens": 8, "messages": [{"role": "system", "content": "x"}]})"), "messages");
  EXPECT_EQ(param_of(R"({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "image",
                         "source": {}}]}]})"), "messages");
  EXPECT_EQ(param_of(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
                         "tools": [{"name": "f"}]})"), "tools");
  EXPECT_EQ(param_of(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
                         "tool_choice": {"type": "some"}})"), "tool_choice");
  EXPECT_EQ(param_of(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
                         "stop_sequences": [1]})"), "stop_sequences");
  EXPECT_EQ(param_of(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
                         "thinking": {"type": "maybe"}})"), "thinking");
  EXPECT_EQ(param_of(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}], "stream": true})"),
            "(accepted)");
}

TEST(AnthropicMessages, AChatCompletionIsAMessage) {
  const std::string chat = R"({"id": "chatcmpl-00ab", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {"role": "assistant",
      "content": "Let me check.", "reasoning_content": "think",
      "tool_calls": [{"id": "call_7", "type": "function",
                      "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}}],
    "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}})";
  const json m = json::parse(chat_completion_to_message(chat));
  EXPECT_EQ(m["id"], "msg_00ab");
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["stop_reason"], "tool_use");
  ASSERT_EQ(m["content"].size(), 3u);
  EXPECT_EQ(m["content"][0]["type"], "thinking");
  EXPECT_EQ(m["content"][1], json({{"type", "text"}, {"text", "Let me check."}}));
  EXPECT_EQ(m["content"][2]["input"]["city"], "Oslo");
  EXPECT_EQ(m["content"][2]["id"], "call_7");
  EXPECT_EQ(m["usage"]["input_tokens"], 11);
  EXPECT_EQ(m["usage"]["output_tokens"], 5);
  EXPECT_EQ(anthropic_stop_reason("length"), "max_tokens");
  EXPECT_EQ(anthropic_stop_reason("stop"), "end_turn");
  const json e = json::parse(anthropic_error_text(invalid_request("bad", "max_tokens")));
  EXPECT_EQ(e["type"], "error");
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
}

std::string chunk(const std::string& delta, const std::string& finish = "") {
  return "data: {\"id\":\"chatcmpl-1f\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":" + delta +
         ",\"finish_reason\":" + (finish.empty() ? "null" : "\"" + finish + "\"") + "}]}\n\n";
}

TEST(AnthropicMessages, AChatStreamBecomesMessagesEventsInOrder) {
  const std::string sse =
      chunk(R"({"role":"assistant","content":""})") + chunk(R"({"reasoning_content":"hm"})") +
      chunk(R"({"content":"Hi"})") + chunk(R"({"content":" there"})") +
      chunk(R"({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]})") +
      chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]})") + chunk("{}", "tool_calls") +
      "data: {\"id\":\"chatcmpl-1f\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":9}}\n\n"
      "data: [DONE]\n\n";
  // Fed in pieces cut anywhere: the translator carries an incomplete event over.
  MessageStreamTranslator t;
  std::string out;
  for (size_t i = 0; i < sse.size(); i += 7) out += t.feed(sse.substr(i, 7));
  EXPECT_TRUE(t.finished());
  std::vector<std::string> types;
  std::vector<json> data;
  for (size_t at = 0; (at = out.find("event: ", at)) != std::string::npos;) {
    const size_t nl = out.find('\n', at), end = out.find("\n\n", at);
    types.push_back(out.substr(at + 7, nl - at - 7));
    data.push_back(json::parse(out.substr(nl + 7, end - nl - 7)));
    EXPECT_EQ(data.back()["type"], types.back());
    at = end;
  }
  const std::vector<std::string> want = {
      "message_start", "content_block_start", "content_block_delta", "content_block_stop",  // thinking
      "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",  // text
      "content_block_start", "content_block_delta", "content_block_stop",  // tool_use
      "message_delta", "message_stop"};
  ASSERT_EQ(types, want) << out;
  EXPECT_EQ(data[0]["message"]["id"], "msg_1f");
  EXPECT_EQ(data[1]["content_block"]["type"], "thinking");
  EXPECT_EQ(data[2]["delta"]["thinking"], "hm");
  EXPECT_EQ(data[5]["index"], 1);
  EXPECT_EQ(data[6]["delta"]["text"], " there");
  EXPECT_EQ(data[8]["content_block"]["name"], "f");
  EXPECT_EQ(data[9]["delta"], json({{"type", "input_json_delta"}, {"partial_json", "{\"a\":1}"}}));
  EXPECT_EQ(data[11]["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(data[11]["usage"]["output_tokens"], 9);
  EXPECT_EQ(t.feed("data: {\"choices\":[]}\n\n"), "");  // nothing after the end
}

TEST(ResponsesApi, InputItemsAndAPreviousResponseBecomeChatMessages) {
  ResponseStore store(2, 3600);
  store.put("resp_a", ojson::parse(R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])"));
  const ojson body = ojson::parse(R"({
    "model": "m", "instructions": "Be brief.", "previous_response_id": "resp_a", "max_output_tokens": 32,
    "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
    "tool_choice": {"type": "function", "name": "get_weather"}, "text": {"format": {"type": "json_schema",
    "name": "w", "schema": {"type": "object"}}}, "reasoning": {"effort": "none"}, "store": false,
    "input": [{"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
              {"type": "reasoning", "summary": [{"type": "summary_text", "text": "call it"}]},
              {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
              {"type": "function_call_output", "call_id": "c1", "output": "sunny"}]})");
  const ResponsesRequest r = responses_to_chat_body(body, store);
  EXPECT_FALSE(r.store);
  const ojson& m = r.chat_body["messages"];
  ASSERT_EQ(m.size(), 6u) << m.dump();
  EXPECT_EQ(m[0], ojson({{"role", "system"}, {"content", "Be brief."}}));  // instructions: not carried forward
  EXPECT_EQ(m[1]["content"], "Hi");
  EXPECT_EQ(m[3]["content"], "Weather?");
  EXPECT_EQ(m[4]["tool_calls"][0]["id"], "c1");
  EXPECT_EQ(m[4]["reasoning_content"], "call it");
  EXPECT_EQ(m[5], ojson({{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "sunny"}}));
  EXPECT_EQ(r.conversation.size(), 5u);
  EXPECT_EQ(r.chat_body["max_tokens"], 32);
  EXPECT_EQ(r.chat_body["response_format"]["type"], "json_schema");
  EXPECT_EQ(r.chat_body["chat_template_kwargs"]["enable_thinking"], false);
  EXPECT_EQ(r.echo["previous_response_id"], "resp_a");
  const GenerationRequest g = parse_chat_request(r.chat_body, JsonLimits{});
  EXPECT_EQ(g.tools.choice, ToolRequest::Choice::kNamed);
  // The store keeps its last 2; an unknown id is a 400 naming the field.
  store.put("resp_b", ojson::array());
  store.put("resp_c", ojson::array());
  EXPECT_FALSE(store.get("resp_a").has_value());
  try {
    responses_to_chat_body(body, store);
    ADD_FAILURE() << "an evicted previous_response_id was accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param, "previous_response_id");
  }
  for (const char* bad : {R"({"input": []})", R"({"input": [{"type": "web_search_call"}]})",
                          R"({"input": "x", "tools": [{"type": "web_search"}]})",
                          R"({"input": "x", "text": {"format": {"type": "yaml"}}})", R"({"input": "x", "store": 1})"}) {
    EXPECT_THROW(responses_to_chat_body(ojson::parse(bad), store), ApiError) << bad;
  }
}

TEST(ResponsesApi, AChatCompletionIsAResponseAndAStreamItsTypedEvents) {
  const std::string chat = R"({"id": "chatcmpl-9c", "created": 5, "model": "m", "choices": [{"index": 0,
    "finish_reason": "tool_calls", "message": {"role": "assistant", "content": "ok", "tool_calls": [{"id": "c2",
    "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]}}],
    "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}})";
  ojson assistant;
  std::string id;
  const json r = json::parse(chat_completion_to_response(chat, ojson::object(), &assistant, &id));
  EXPECT_EQ(r["id"], "resp_9c");
  EXPECT_EQ(id, "resp_9c");
  EXPECT_EQ(r["status"], "completed");
  ASSERT_EQ(r["output"].size(), 2u);
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "ok");
  EXPECT_EQ(r["output"][1]["type"], "function_call");
  EXPECT_EQ(r["output"][1]["call_id"], "c2");
  EXPECT_EQ(r["usage"]["total_tokens"], 10);
  EXPECT_EQ(assistant["tool_calls"][0]["id"], "c2");
  const std::string sse =
      chunk(R"({"role":"assistant","content":""})") + chunk(R"({"content":"Hi"})") +
      chunk(R"({"tool_calls":[{"index":0,"id":"c3","type":"function","function":{"name":"f","arguments":"{}"}}]})") +
      chunk("{}", "length") +
      "data: {\"id\":\"chatcmpl-1f\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n"
      "data: [DONE]\n\n";
  ResponsesStreamTranslator t(ojson::object());
  std::string out;
  for (size_t i = 0; i < sse.size(); i += 11) out += t.feed(sse.substr(i, 11));
  ASSERT_TRUE(t.finished());
  std::vector<std::string> types;
  int64_t seq = 0;
  for (size_t at = 0; (at = out.find("event: ", at)) != std::string::npos;) {
    const size_t nl = out.find('\n', at), end = out.find("\n\n", at);
    types.push_back(out.substr(at + 7, nl - at - 7));
    const json d = json::parse(out.substr(nl + 7, end - nl - 7));
    EXPECT_EQ(d["sequence_number"], seq++);
    at = end;
  }
  const std::vector<std::string> want = {
      "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
      "response.output_text.delta", "response.output_text.done", "response.content_part.done",
      "response.output_item.done", "response.output_item.added", "response.function_call_arguments.delta",
      "response.function_call_arguments.done", "response.output_item.done", "response.incomplete"};
  EXPECT_EQ(types, want) << out;
  EXPECT_EQ(t.id(), "resp_1f");
  EXPECT_EQ(t.assistant()["content"], "Hi");
  EXPECT_EQ(t.assistant()["tool_calls"][0]["id"], "c3");
}

}  // namespace
}  // namespace slimkv
