#include "server/response_text.h"

#include <fmt/format.h>

namespace slimkv {
namespace {

using nlohmann::json;

json bytes_array(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// One chat logprobs entry as logprobs_json builds it (keys in nlohmann::json's sorted order when dumped).
json chat_entry(const TokenLogprobEntry& e) {
  json top = json::array();
  for (const auto& [t, lp] : e.top) top.push_back({{"token", t}, {"logprob", lp}, {"bytes", bytes_array(t)}});
  return {{"token", e.text}, {"logprob", e.logprob}, {"bytes", bytes_array(e.text)}, {"top_logprobs", std::move(top)}};
}

json completion_top(const TokenLogprobEntry& e) {
  json top = json::object();
  for (const auto& [t, lp] : e.top) {
    if (!top.contains(t)) top[t] = lp;  // pieces may coincide as text; keep the more likely (as logprobs_json)
  }
  return top;
}

template <class F>
void append_array(std::string& out, const std::vector<TokenLogprobEntry>& entries, F&& item) {
  out += '[';
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i) out += ',';
    item(i, entries[i]);
  }
  out += ']';
}

}  // namespace

void append_logprobs_json(std::string& out, bool chat, const std::vector<TokenLogprobEntry>& entries,
                          int64_t text_offset0) {
  if (chat) {
    out += "{\"content\":";
    append_array(out, entries, [&](size_t, const TokenLogprobEntry& e) { out += dump_json(chat_entry(e)); });
    out += '}';
    return;
  }
  // Completions: {"text_offset": [...], "token_logprobs": [...], "tokens": [...], "top_logprobs": [...]}.
  out += "{\"text_offset\":";
  int64_t off = text_offset0;
  append_array(out, entries, [&](size_t, const TokenLogprobEntry& e) {
    out += fmt::format("{}", off);
    off += static_cast<int64_t>(e.text.size());
  });
  out += ",\"token_logprobs\":";
  append_array(out, entries, [&](size_t, const TokenLogprobEntry& e) { out += dump_json(json(e.logprob)); });
  out += ",\"tokens\":";
  append_array(out, entries, [&](size_t, const TokenLogprobEntry& e) { out += dump_json(json(e.text)); });
  out += ",\"top_logprobs\":";
  append_array(out, entries, [&](size_t, const TokenLogprobEntry& e) { out += dump_json(completion_top(e)); });
  out += '}';
}

size_t logprobs_text_bound(const std::vector<TokenLogprobEntry>& entries) {
  // An entry's text is at most 6 bytes per byte escaped ("\u001f") plus 4 in its bytes array ("255,"); a number at
  // most 24; keys and punctuation under 64 an entry.
  size_t n = 64;
  for (const auto& e : entries) {
    n += 96 + 10 * e.text.size();
    for (const auto& [t, lp] : e.top) n += 96 + 10 * t.size();
  }
  return n;
}

std::string response_text(const ResponseHeader& h, std::vector<FinishedChoice>& choices, const Usage& u) {
  std::vector<std::string> shells;  // each choice without its logprobs: small (the text, a few fields)
  size_t bound = 512;
  for (const FinishedChoice& c : choices) {
    shells.push_back(dump_json(c.choice));
    bound += shells.back().size() + 1 + (c.logprobs ? logprobs_text_bound(*c.logprobs) : 0);
  }
  std::string out;
  out.reserve(bound);
  out += "{\"choices\":[";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i) out += ',';
    const std::string& shell = shells[i];
    // Keys are sorted: "finish_reason" (a string: its quotes escaped), "index", then "logprobs" — the first
    // unescaped "logprobs": in the text is the key.
    static const std::string kKey = "\"logprobs\":null";
    const size_t at = choices[i].logprobs ? shell.find(kKey) : std::string::npos;
    if (at == std::string::npos) {
      out += shell;
      continue;
    }
    out.append(shell, 0, at + kKey.size() - 4);
    append_logprobs_json(out, h.chat, *choices[i].logprobs, 0);
    out.append(shell, at + kKey.size());
    std::vector<TokenLogprobEntry>().swap(*choices[i].logprobs);  // written: its records go now
  }
  out += "],";
  const std::string rest = dump_json(json{{"id", h.id},
                                          {"object", h.chat ? "chat.completion" : "text_completion"},
                                          {"created", h.created},
                                          {"model", h.model},
                                          {"usage", usage_json(u)}});
  out.append(rest, 1);  // its keys all sort after "choices"
  return out;
}

}  // namespace slimkv
