#include "server/chat_template.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include "core/check.h"

namespace slimkv {

const char* chat_template_name(ChatTemplate t) {
  switch (t) {
    case ChatTemplate::Plain: return "plain";
    case ChatTemplate::ChatML: return "chatml";
    case ChatTemplate::Llama2: return "llama2";
    case ChatTemplate::Llama3: return "llama3";
    case ChatTemplate::Gemma: return "gemma";
    case ChatTemplate::Phi3: return "phi3";
    case ChatTemplate::Mistral: return "mistral";
    case ChatTemplate::DeepSeekV4: return "deepseek-v4";
  }
  return "?";
}

ChatTemplate detect_chat_template(std::string_view j) {
  auto has = [&](std::string_view s) { return j.find(s) != std::string_view::npos; };
  if (has("<|im_start|>")) return ChatTemplate::ChatML;
  if (has("<|start_header_id|>")) return ChatTemplate::Llama3;
  if (has("<start_of_turn>")) return ChatTemplate::Gemma;
  if (has("<|user|>") && has("<|end|>")) return ChatTemplate::Phi3;
  if (has("[INST]") && has("<<SYS>>")) return ChatTemplate::Llama2;
  if (has("[INST]")) return ChatTemplate::Mistral;
  return ChatTemplate::Plain;
}

ChatTemplate resolve_chat_template(const std::string& s) {
  for (auto t : {ChatTemplate::Plain, ChatTemplate::ChatML, ChatTemplate::Llama2, ChatTemplate::Llama3,
                 ChatTemplate::Gemma, ChatTemplate::Phi3, ChatTemplate::Mistral, ChatTemplate::DeepSeekV4}) {
    if (s == chat_template_name(t)) return t;
  }
  if (s == "qwen") return ChatTemplate::ChatML;
  std::ifstream in(s);
  SLIMKV_CHECK(in.good(),
               "--chat-template {}: neither a known name (plain, chatml, qwen, llama2, llama3, gemma, phi3, mistral, "
               "deepseek-v4) nor a readable file", s);
  std::stringstream ss;
  ss << in.rdbuf();
  ChatTemplate t = detect_chat_template(ss.str());
  SLIMKV_CHECK(t != ChatTemplate::Plain, "--chat-template {}: not one of the recognised formats (ChatML/Qwen, Llama-2, "
               "Llama-3, Gemma, Phi-3, Mistral); pass a name instead", s);
  return t;
}

namespace {

std::string system_prefix(const std::vector<ChatMessage>& m, size_t& first) {  // leading system message, if any
  first = 0;
  if (!m.empty() && (m[0].role == "system" || m[0].role == "developer")) {
    first = 1;
    return m[0].content;
  }
  return "";
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

namespace {

std::string render_chat_with_prompt(ChatTemplate t, const std::vector<ChatMessage>& m);

// What a format appends to open the assistant's reply (Llama-2 and Mistral have none: [/INST] ends the turn).
std::string_view generation_prompt(ChatTemplate t) {
  switch (t) {
    case ChatTemplate::Plain: return "Assistant:";
    case ChatTemplate::ChatML: return "<|im_start|>assistant\n";
    case ChatTemplate::Llama3: return "<|start_header_id|>assistant<|end_header_id|>\n\n";
    case ChatTemplate::Gemma: return "<start_of_turn>model\n";
    case ChatTemplate::Phi3: return "<|assistant|>\n";
    case ChatTemplate::DeepSeekV4: return "<｜Assistant｜></think>";
    default: return "";
  }
}

}  // namespace

std::string render_chat(ChatTemplate t, const std::vector<ChatMessage>& m, bool add_generation_prompt) {
  std::string out = render_chat_with_prompt(t, m);
  const std::string_view g = generation_prompt(t);
  if (!add_generation_prompt && !g.empty() && out.size() >= g.size() && out.compare(out.size() - g.size(), g.size(), g) == 0) {
    out.resize(out.size() - g.size());
  }
  return out;
}

namespace {

std::string render_chat_with_prompt(ChatTemplate t, const std::vector<ChatMessage>& m) {
  std::string out;
  size_t first = 0;
  switch (t) {
    case ChatTemplate::Plain:  // "System: …\nUser: …\nAssistant: …\nAssistant:"
      for (const auto& x : m) {
        std::string role = x.role;
        role[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(role[0])));
        out += role + ": " + x.content + "\n";
      }
      return out + "Assistant:";
    case ChatTemplate::ChatML:
      for (const auto& x : m) out += "<|im_start|>" + x.role + "\n" + x.content + "<|im_end|>\n";
      return out + "<|im_start|>assistant\n";
    case ChatTemplate::Llama3:  // <|begin_of_text|> is the tokenizer's BOS
      for (const auto& x : m) {
        out += "<|start_header_id|>" + x.role + "<|end_header_id|>\n\n" + trim(x.content) + "<|eot_id|>";
      }
      return out + "<|start_header_id|>assistant<|end_header_id|>\n\n";
    case ChatTemplate::Gemma:
      for (const auto& x : m) {
        const std::string role = x.role == "assistant" ? "model" : "user";  // system folds into a user turn
        out += "<start_of_turn>" + role + "\n" + trim(x.content) + "<end_of_turn>\n";
      }
      return out + "<start_of_turn>model\n";
    case ChatTemplate::Phi3:
      for (const auto& x : m) out += "<|" + x.role + "|>\n" + x.content + "<|end|>\n";
      return out + "<|assistant|>\n";
    case ChatTemplate::Llama2: {
      std::string sys = system_prefix(m, first);
      bool first_user = true;
      for (size_t i = first; i < m.size(); ++i) {
        if (m[i].role == "assistant") {
          out += " " + trim(m[i].content) + " </s>";
          continue;
        }
        std::string content = trim(m[i].content);
        if (first_user && !sys.empty()) content = "<<SYS>>\n" + sys + "\n<</SYS>>\n\n" + content;
        first_user = false;
        out += (out.empty() ? "" : "<s>") + std::string("[INST] ") + content + " [/INST]";
      }
      return out;
    }
    case ChatTemplate::Mistral: {
      std::string sys = system_prefix(m, first);
      for (size_t i = first; i < m.size(); ++i) {
        if (m[i].role == "assistant") {
          out += m[i].content + "</s>";
          continue;
        }
        std::string content = m[i].content;
        if (i + 1 == m.size() && !sys.empty()) content = sys + "\n\n" + content;  // as Mistral's template does
        out += "[INST]" + content + "[/INST]";
      }
      return out;
    }
    case ChatTemplate::DeepSeekV4: {
      // encoding_dsv4.py in chat mode; the BOS is the tokenizer's. Consecutive user and tool messages form one user
      // turn (parts joined by a blank line, tool results as <tool_result>…</tool_result>); a user turn followed by
      // the assistant (or ending the conversation) opens the reply with <｜Assistant｜></think>.
      const std::string user = "<｜User｜>", assistant = "<｜Assistant｜>", eos = "<｜end▁of▁sentence｜>";
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
        if (opens && (i == m.size() || m[i].role == "assistant")) out += assistant + "</think>";
      }
      return out;
    }
  }
  return out;
}

}  // namespace

}  // namespace slimkv
