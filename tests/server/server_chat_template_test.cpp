// The server renders chat prompts with the Jinja engine (src/jinja/) from the model's own template, parsed once at
// start-up: a GGUF copy of stories260K carrying Qwen3's template, and --chat-template FILE with Gemma 3's. The prompt
// is observed as usage.prompt_tokens, equal to the token count of transformers' render of the same messages
// (../shared/data/real-tokenizers/<family>/chat_expected.jsonl). A template's own rule (Gemma's role alternation) and
// any other render error are 400 invalid_request_error naming the problem, never a 500; a long render still meets
// the context check.
#include <filesystem>
#include <fstream>
#include <map>

#include "formats/gguf_file.h"
#include "formats/gguf_writer.h"
#include "gguf_copy.h"
#include "server_process.h"
#include "tokenizer/tokenizer.h"

namespace slimkv::test {
namespace {

using json = nlohmann::json;

std::string chat_family_dir(const std::string& fam) { return data_dir() + "/real-tokenizers/" + fam; }
std::string chat_stories_gguf() { return models_dir() + "/stories260K/stories260K.gguf"; }

json chat_read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::string chat_template_text_of(const std::string& fam) {
  return chat_read_json(chat_family_dir(fam) + "/tokenizer_config.json")["chat_template"].get<std::string>();
}

// The shared chat cases the server can send as is: string contents, no tools, no template kwargs.
std::vector<json> chat_plain_cases() {
  std::vector<json> out;
  for (const json& c : chat_read_json(data_dir() + "/real-tokenizers/chat-cases.json")) {
    bool ok = !c.contains("tools") && !c.contains("kwargs");
    for (const json& m : c["messages"]) ok = ok && m.size() == 2 && m.contains("role") && m["content"].is_string();
    if (ok) out.push_back(c);
  }
  return out;
}

std::map<std::string, json> chat_expected_renders(const std::string& fam) {
  std::map<std::string, json> out;
  std::ifstream in(chat_family_dir(fam) + "/chat_expected.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      json j = json::parse(line);
      out[j["id"].get<std::string>()] = j;
    }
  }
  return out;
}

std::string chat_temp_path(const std::string& name) {
  return ::testing::TempDir() + "/slimkv-chat-" + std::to_string(::getpid()) + "-" + name;
}

// stories260K's GGUF with tokenizer.chat_template set: a model whose own template is a real family's.
std::string chat_gguf_with_template(const std::string& source) {
  const std::string path = chat_temp_path("model.gguf");
  GgufFile g(chat_stories_gguf());
  GgufWriter w;
  copy_gguf_metadata(g, w);
  w.add_string("tokenizer.chat_template", source);
  for (const GgufTensorInfo& t : g.tensors()) w.add_tensor(t.name, t.dtype, t.dims, t.data, t.size_bytes);
  w.write(path);
  return path;
}

std::string chat_write_file(const std::string& name, const std::string& text) {
  const std::string path = chat_temp_path(name);
  std::ofstream(path) << text;
  return path;
}

// The prompt tokens the server must count for `rendered`: the tokenizer adds BOS itself, so the render's leading
// BOS text (Gemma's {{ bos_token }}) stands for that id and is not tokenized as text.
size_t chat_tokens_of(const Tokenizer& tok, std::string rendered, const std::string& bos_text) {
  if (!bos_text.empty() && rendered.rfind(bos_text, 0) == 0) rendered.erase(0, bos_text.size());
  return tok.encode(rendered, EncodeOptions{true, /*parse_special=*/true}).size();  // as the server encodes
}

json chat_request_body(const json& c) {
  return {{"messages", c["messages"]}, {"add_generation_prompt", c["add_generation_prompt"]}, {"max_tokens", 1},
          {"temperature", 0}};
}

// Every plain case through the server: prompt_tokens as the expected render; the expected errors are 400s with
// the template's text. Returns how many cases were checked.
int chat_check_cases(const ServerProcess& s, const std::string& fam, const std::string& bos_text) {
  const auto tok = tokenizer_from_gguf(GgufFile(chat_stories_gguf()));
  const auto expected = chat_expected_renders(fam);
  int checked = 0;
  for (const json& c : chat_plain_cases()) {
    const std::string id = c["id"];
    if (!expected.count(id)) continue;
    const json& e = expected.at(id);
    auto [status, r] = s.post("/v1/chat/completions", chat_request_body(c));
    if (e.contains("error")) {
      EXPECT_EQ(status, 400) << fam << " " << id << ": " << r.dump();
      EXPECT_EQ(r["error"]["type"], "invalid_request_error") << r.dump();
      EXPECT_EQ(r["error"]["message"], e["error"]) << fam << " " << id;
    } else {
      EXPECT_EQ(status, 200) << fam << " " << id << ": " << r.dump();
      if (status != 200) continue;
      EXPECT_EQ(r["usage"]["prompt_tokens"].get<size_t>(), chat_tokens_of(*tok, e["rendered"], bos_text))
          << fam << " " << id << ": " << e["rendered"];
    }
    ++checked;
  }
  return checked;
}

TEST(ServerChatTemplate, TheModelsOwnTemplateRendersAsTransformers) {
  SKIP_IF_MISSING(chat_stories_gguf());
  SKIP_IF_MISSING(chat_family_dir("qwen3"));
  ServerProcess s({}, chat_gguf_with_template(chat_template_text_of("qwen3")));
  EXPECT_NE(s.log().find("chat template the model's"), std::string::npos) << s.log();
  EXPECT_GE(chat_check_cases(s, "qwen3", ""), 8);
}

// Gemma 3's template from a file: its prompts, and its rule as a 400 naming it.
TEST(ServerChatTemplate, AJinjaFileAndGemmasAlternationRule) {
  SKIP_IF_MISSING(chat_stories_gguf());
  SKIP_IF_MISSING(chat_family_dir("gemma3"));
  const std::string file = chat_write_file("gemma3.jinja", chat_template_text_of("gemma3"));
  ServerProcess s({"--chat-template", file}, chat_stories_gguf());
  // transformers' render starts with Gemma's "<bos>"; the server's with the model's BOS text (stories260K's "<s>"),
  // dropped there because the tokenizer adds the BOS id itself: both stand for that one id.
  EXPECT_GE(chat_check_cases(s, "gemma3", "<bos>"), 8);
  json bad = {{"messages", {{{"role", "user"}, {"content", "a"}}, {{"role", "user"}, {"content", "b"}}}}};
  auto [status, r] = s.post("/v1/chat/completions", bad);
  EXPECT_EQ(status, 400) << r.dump();
  EXPECT_EQ(r["error"]["type"], "invalid_request_error");
  EXPECT_EQ(r["error"]["message"], "Conversation roles must alternate user/assistant/user/assistant/...");
  EXPECT_EQ(r["error"]["param"], "messages");
}

// Render errors other than a rule are 400s saying what failed (a type error, the sandbox's loop bound); a render
// longer than the context meets the usual context check; the server keeps answering after each.
TEST(ServerChatTemplate, RenderErrorsAre400sAndLongRendersMeetTheContextCheck) {
  SKIP_IF_MISSING(default_model());
  const std::string file = chat_write_file(
      "errors.jinja",
      "{% set c = messages[0].content %}{% if c == 'div' %}{{ 1 / 0 }}"
      "{% elif c == 'loop' %}{% for i in range(100000000) %}x{% endfor %}"
      "{% elif c == 'long' %}{% for i in range(20000) %}word {% endfor %}{% else %}{{ c }}{% endif %}");
  ServerProcess s({"--chat-template", file});
  auto ask = [&](const std::string& content) {
    return s.post("/v1/chat/completions",
                  json{{"messages", {{{"role", "user"}, {"content", content}}}}, {"max_tokens", 1}});
  };
  for (const char* c : {"div", "loop"}) {
    auto [status, r] = ask(c);
    EXPECT_EQ(status, 400) << c << ": " << r.dump();
    EXPECT_EQ(r["error"]["type"], "invalid_request_error") << r.dump();
    EXPECT_NE(r["error"]["message"].get<std::string>().find("chat template"), std::string::npos) << r.dump();
  }
  auto [status, r] = ask("long");
  EXPECT_EQ(status, 400) << r.dump();
  EXPECT_NE(r["error"]["message"].get<std::string>().find("maximum context length"), std::string::npos) << r.dump();
  EXPECT_EQ(ask("hello").first, 200);
}

}  // namespace
}  // namespace slimkv::test
