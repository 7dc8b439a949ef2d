// The real server on a model that carries Qwen3's real vocabulary and chat template (tests/qwen3_chat_model.h):
// every shared chat case — tools and chat_template_kwargs (enable_thinking) included — reaches the model as exactly
// transformers' render (POST /tokenize's ids equal Qwen3's tokenizer on chat_expected.jsonl's text; byte-level BPE
// is one-to-one, so equal ids mean equal text), and a chat completion counts those tokens.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "qwen3_chat_model.h"
#include "server/server_process.h"

namespace slimkv::test {
namespace {

using ojson = nlohmann::ordered_json;

std::string qwen3_chat_path() {
  static const std::string p = [] {
    const std::string path = ::testing::TempDir() + "/qwen3-chat-" + std::to_string(::getpid()) + "/qwen3-chat.gguf";
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    qwen3chat::write_model(path);
    return path;
  }();
  return p;
}

std::map<std::string, ojson> qwen3_expected() {
  std::map<std::string, ojson> out;
  std::ifstream in(qwen3chat::tokenizer_dir() + "/chat_expected.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      ojson j = ojson::parse(line);
      out[j["id"].get<std::string>()] = j;
    }
  }
  return out;
}

// The request fields of a shared chat case (key order kept: the template prints tools' schemas as given).
ojson chat_fields(const ojson& c) {
  ojson b = {{"messages", c["messages"]}, {"add_generation_prompt", c["add_generation_prompt"]}};
  if (c.contains("tools")) b["tools"] = c["tools"];
  if (c.contains("kwargs")) b["chat_template_kwargs"] = c["kwargs"];
  return b;
}

TEST(ServerQwen3Chat, EveryChatCaseReachesTheModelAsTransformersRendersIt) {
  SKIP_IF_MISSING(qwen3chat::tokenizer_dir() + "/tokenizer.json.gz");
  ServerProcess s({}, qwen3_chat_path());
  const auto tok = load_hf_tokenizer(qwen3chat::tokenizer_dir());
  const auto expected = qwen3_expected();
  std::ifstream in(data_dir() + "/real-tokenizers/chat-cases.json");
  const ojson cases = ojson::parse(in);
  int checked = 0, with_tools = 0;
  for (const ojson& c : cases) {
    const std::string id = c["id"];
    ASSERT_TRUE(expected.count(id)) << id;
    const ojson& e = expected.at(id);
    auto [status, r] = s.post("/tokenize", chat_fields(c).dump());
    if (e.contains("error")) {
      EXPECT_EQ(status, 400) << id << ": " << r.dump();
      continue;
    }
    ASSERT_EQ(status, 200) << id << ": " << r.dump();
    const auto want = tok->encode(e["rendered"].get<std::string>(), EncodeOptions{true, /*parse_special=*/true});
    EXPECT_EQ(r["tokens"].get<std::vector<int32_t>>(), want) << id << ": " << e["rendered"];
    ojson body = chat_fields(c);
    body["max_tokens"] = 1;
    body["temperature"] = 0;
    auto [cstatus, cr] = s.post("/v1/chat/completions", body.dump());
    EXPECT_EQ(cstatus, 200) << id << ": " << cr.dump();
    if (cstatus == 200) EXPECT_EQ(cr["usage"]["prompt_tokens"].get<size_t>(), want.size()) << id;
    ++checked;
    with_tools += c.contains("tools") ? 1 : 0;
  }
  EXPECT_EQ(checked, 16);  // Qwen3's template raises on none of the shared cases
  EXPECT_GE(with_tools, 1);
}

// The official openai npm client doing an agent's work against this model (tests/openai_client/agent_test.mjs):
// tool-call round trips (streamed and not), reasoning_content in a stream, json_schema outputs validated by ajv.
// Runs an official npm client's script (tests/openai_client/NAME.mjs: BASE_URL API_KEY MODEL) against a server on
// the Qwen3-template model started with that key; the script prints "NAME: N passed" when every check passed.
// server_args: more flags for the server; script_arg: a 4th argument for the script.
void run_client_script(const std::string& name, const std::string& module, int checks,
                       std::vector<std::string> server_args = {}, const std::string& script_arg = "") {
  const std::string dir = std::string(SLIMKV_SOURCE_DIR) + "/tests/openai_client";
  SKIP_IF_MISSING(dir + "/node_modules/" + module);  // scripts/test runs npm ci there
  server_args.insert(server_args.end(), {"--api-key", "sk-" + name});
  ServerProcess s(server_args, qwen3_chat_path());
  const std::string log = ::testing::TempDir() + "/" + name + "-" + std::to_string(::getpid()) + ".log";
  const std::string cmd = "node " + dir + "/" + name + ".mjs " + s.base_url() + " sk-" + name + " qwen3-chat " +
                          script_arg + " > " + log + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream in(log);
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(name + ": " + std::to_string(checks) + " passed"), std::string::npos) << out;
}

TEST(ServerQwen3Chat, OpenAiClientAgentTest) {  // the openai npm client as agent frameworks use it (agent_test.mjs)
  SKIP_IF_MISSING(qwen3chat::tokenizer_dir() + "/tokenizer.json.gz");
  run_client_script("agent_test", "ajv", 4);
}

TEST(ServerQwen3Chat, OpenAiResponsesClientTest) {  // the openai npm client's responses.create (responses_test.mjs)
  SKIP_IF_MISSING(qwen3chat::tokenizer_dir() + "/tokenizer.json.gz");
  run_client_script("responses_test", "openai", 5);
}

// The openai npm client's embeddings.create (embeddings_test.mjs) against `slimkv embed`'s vectors for the same
// texts, written here first.
TEST(ServerQwen3Chat, OpenAiEmbeddingsClientTest) {
  SKIP_IF_MISSING(qwen3chat::tokenizer_dir() + "/tokenizer.json.gz");
  const std::vector<std::string> texts = {"Hello, world!", "Embeddings pool the final hidden states.", "<think>"};
  std::string cmd = std::string(SLIMKV_BINARY) + " embed -m " + qwen3_chat_path() + " --threads 1 --pooling mean";
  for (const auto& t : texts) cmd += " -p '" + t + "'";
  const std::string expected = ::testing::TempDir() + "/embeddings-" + std::to_string(::getpid()) + ".json";
  ASSERT_EQ(std::system((cmd + " > " + expected + ".direct 2>/dev/null").c_str()), 0) << cmd;
  std::ifstream in(expected + ".direct");
  ojson direct = ojson::parse(in);
  direct["texts"] = texts;
  std::ofstream(expected) << direct.dump();
  run_client_script("embeddings_test", "openai", 3, {"--pooling", "mean"}, expected);
}

TEST(ServerQwen3Chat, AnthropicClientTest) {  // the official @anthropic-ai/sdk npm client (anthropic_test.mjs)
  SKIP_IF_MISSING(qwen3chat::tokenizer_dir() + "/tokenizer.json.gz");
  run_client_script("anthropic_test", "@anthropic-ai/sdk", 4);
}

// Anthropic's Messages API on the real server with Qwen3's template: x-api-key accepted; a forced tool call comes
// back as a tool_use block (stop_reason tool_use) whose input is the arguments' object, streamed as Messages
// events in order; the tool's result goes back as a tool_result block; refusals use Anthropic's error object.
TEST(ServerQwen3Chat, AnthropicMessagesRoundTripAToolCall) {
  SKIP_IF_MISSING(qwen3chat::tokenizer_dir() + "/tokenizer.json.gz");
  ServerProcess s({"--api-key", "sk-msg"}, qwen3_chat_path());
  const httplib::Headers key = {{"x-api-key", "sk-msg"}, {"anthropic-version", "2023-06-01"}};
  const ojson tool = ojson::parse(R"({"name": "get_weather", "description": "Weather for a city", "input_schema":
      {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})");
  ojson body = {{"model", "qwen3-chat"}, {"max_tokens", 48}, {"temperature", 0}, {"system", "You help."},
                {"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}},
                {"tools", {tool}}, {"tool_choice", {{"type", "tool"}, {"name", "get_weather"}}}};
  auto [status, r] = s.post("/v1/messages", body.dump(), key);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["type"], "message");
  EXPECT_EQ(r["stop_reason"], "tool_use") << r.dump();
  ASSERT_FALSE(r["content"].empty());
  const nlohmann::json& use = r["content"].back();
  EXPECT_EQ(use["type"], "tool_use");
  EXPECT_EQ(use["name"], "get_weather");
  EXPECT_TRUE(use["input"].is_object());
  EXPECT_GT(r["usage"]["input_tokens"].get<int>(), 0);
  // The result back through the template, as a tool_result block.
  ojson next = body;
  next.erase("tool_choice");
  next["max_tokens"] = 4;
  next["messages"].push_back({{"role", "assistant"}, {"content", {{{"type", "tool_use"}, {"id", use["id"]},
                                                                     {"name", "get_weather"}, {"input", use["input"]}}}}});
  next["messages"].push_back({{"role", "user"}, {"content", {{{"type", "tool_result"}, {"tool_use_id", use["id"]},
                                                                {"content", "sunny, 21 C"}}}}});
  auto [s2, r2] = s.post("/v1/messages", next.dump(), key);
  ASSERT_EQ(s2, 200) << r2.dump();
  EXPECT_LE(r2["usage"]["output_tokens"].get<int>(), 4);
  EXPECT_GT(r2["usage"]["input_tokens"].get<int>(), r["usage"]["input_tokens"].get<int>());
  // Streamed: the same call as events.
  body["stream"] = true;
  auto [s3, sse] = s.post("/v1/messages", body.dump(), key);
  ASSERT_EQ(s3, 200);
  const std::string text = sse.get<std::string>();
  std::vector<std::string> types;
  for (size_t at = 0; (at = text.find("event: ", at)) != std::string::npos; ++at) {
    types.push_back(text.substr(at + 7, text.find('\n', at) - at - 7));
  }
  ASSERT_GE(types.size(), 5u) << text;
  EXPECT_EQ(types.front(), "message_start");
  EXPECT_EQ(types[types.size() - 2], "message_delta");
  EXPECT_EQ(types.back(), "message_stop");
  EXPECT_NE(text.find("\"type\":\"tool_use\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"stop_reason\":\"tool_use\""), std::string::npos) << text;
  // Refusals: Anthropic's error object; no key: 401.
  auto [s4, e4] = s.post("/v1/messages", R"({"messages": [{"role": "user", "content": "hi"}]})", key);
  EXPECT_EQ(s4, 400);
  EXPECT_EQ(e4["type"], "error");
  EXPECT_EQ(e4["error"]["type"], "invalid_request_error");
  EXPECT_NE(e4["error"]["message"].get<std::string>().find("max_tokens"), std::string::npos);
  auto [s5, e5] = s.post("/v1/messages", body.dump());
  EXPECT_EQ(s5, 401);
}

}  // namespace
}  // namespace slimkv::test
