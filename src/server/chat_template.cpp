#include "server/chat_template.h"

#include <cctype>
#include <filesystem>

#include "jinja/chat_context.h"
#include "server/builtin_chat_templates.h"

namespace slimkv {
namespace {

// "System: …\nUser: …\nAssistant: …\nAssistant:" (without the last "Assistant:" when no generation prompt).
std::string render_plain(const std::vector<ChatMessage>& m, bool add_generation_prompt) {
  std::string out;
  for (const auto& x : m) {
    std::string role = x.role;
    role[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(role[0])));
    out += role + ": " + x.content + "\n";
  }
  return add_generation_prompt ? out + "Assistant:" : out;
}

// encoding_dsv4.py in chat mode; the BOS is the tokenizer's. Consecutive user and tool messages form one user turn
// (parts joined by a blank line, tool results as <tool_result>…</tool_result>); a user turn followed by the
// assistant (or ending the conversation) opens the reply with <｜Assistant｜></think>.
std::string render_deepseek_v4(const std::vector<ChatMessage>& m, bool add_generation_prompt) {
  const std::string user = "<｜User｜>", assistant = "<｜Assistant｜>", eos = "<｜end▁of▁sentence｜>";
  const std::string opening = assistant + "</think>";
  std::string out;
  for (size_t i = 0; i < m.size();) {
    const std::string& role = m[i].role;
    if (role == "user" || role == "tool") {
      std::string turn;
      for (; i < m.size() && (m[i].role == "user" || m[i].role == "tool"); ++i) {
        if (!turn.empty()) turn += "\n\n";
        turn += m[i].role == "tool" ? "<tool_result>" + m[i].content + "</tool_result>" : m[i].content;
      }
      out += user + turn;
    } else {
      out += role == "assistant" ? m[i].content + eos : role == "developer" ? user + m[i].content : m[i].content;
      ++i;
    }
    const bool opens = role == "user" || role == "tool" || role == "developer";
    if (opens && (i == m.size() || m[i].role == "assistant")) out += opening;
  }
  if (!add_generation_prompt && out.size() >= opening.size() &&
      out.compare(out.size() - opening.size(), opening.size(), opening) == 0) {
    out.resize(out.size() - opening.size());
  }
  return out;
}

}  // namespace

ChatTemplate ChatTemplate::deepseek_v4() {
  ChatTemplate t;
  t.kind_ = Kind::DeepSeekV4;
  t.name_ = "deepseek-v4";
  return t;
}

ChatTemplate ChatTemplate::from_jinja(std::string name, std::string_view source) {
  ChatTemplate t;
  t.kind_ = Kind::Jinja;
  t.name_ = std::move(name);
  t.source_ = std::string(source);
  try {
    t.template_ = std::make_shared<const jinja::Template>(jinja::Template::parse(source));
  } catch (const jinja::TemplateError& e) {
    fail("chat template {}: does not parse: {}", t.name_, e.what());
  }
  return t;
}

ChatTemplate ChatTemplate::resolve(const std::string& s) {
  if (s == "plain") return plain();
  if (s == "deepseek-v4") return deepseek_v4();
  if (auto src = builtin_chat_template(s)) return from_jinja(s, *src);
  SLIMKV_CHECK(std::filesystem::exists(s),
               "--chat-template {}: neither a known name (plain, deepseek-v4, {}) nor a Jinja template file", s,
               builtin_chat_template_names());
  return from_jinja(s, jinja::find_chat_template(s).source);
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& m, bool add_generation_prompt,
                                 const nlohmann::ordered_json& tools, const nlohmann::ordered_json& kwargs) const {
  switch (kind_) {
    case Kind::Plain: return render_plain(m, add_generation_prompt);
    case Kind::DeepSeekV4: return render_deepseek_v4(m, add_generation_prompt);
    case Kind::Jinja: break;
  }
  jinja::ChatInput in;
  for (const auto& x : m) {
    in.messages.push_back(x.message.is_object() ? x.message
                                                : nlohmann::ordered_json{{"role", x.role}, {"content", x.content}});
  }
  in.add_generation_prompt = add_generation_prompt;
  in.tools = tools;
  if (kwargs.is_object()) in.kwargs = kwargs;
  if (!tokens_.bos.empty()) in.special_tokens["bos_token"] = tokens_.bos;
  if (!tokens_.eos.empty()) in.special_tokens["eos_token"] = tokens_.eos;
  std::string out = jinja::render_chat(*template_, in);
  if (tokens_.tokenizer_adds_bos && !tokens_.bos.empty() && out.compare(0, tokens_.bos.size(), tokens_.bos) == 0) {
    out.erase(0, tokens_.bos.size());
  }
  return out;
}

}  // namespace slimkv
