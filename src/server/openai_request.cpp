#include "server/openai_request.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_set>

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/json_field.h"

namespace slimkv {
namespace {

using ojson = nlohmann::ordered_json;  // key order kept (templates render it)

constexpr int32_t kMaxN = 16;
constexpr int32_t kMaxLogprobs = 20;
constexpr size_t kMaxStops = 16;

const char* type_name(const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::null: return "null";
    case ojson::value_t::boolean: return "boolean";
    case ojson::value_t::string: return "string";
    case ojson::value_t::array: return "array";
    case ojson::value_t::object: return "object";
    case ojson::value_t::number_float: return "number";
    default: return "integer";
  }
}


ApiError wrong_type(const char* key, const char* want, const ojson& v) {
  return invalid_request(fmt::format("'{}' must be {} (got {})", key, want, type_name(v)), key);
}

// One rule for every integer field: an integer, or a number with an integral value (16.0, 1e3: Python clients send
// them); an integral value past int64 is "too large", anything else "must be an integer". `what` names the field.
int64_t integral(const ojson& v, const char* key, const std::string& what) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      throw invalid_request(fmt::format("{} is too large", what), key);
    }
    return v.get<int64_t>();
  }
  if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>())) {
    const double d = v.get<double>();
    if (std::fabs(d) >= 9.2e18) throw invalid_request(fmt::format("{} is too large", what), key);
    return static_cast<int64_t>(d);
  }
  throw invalid_request(fmt::format("{} must be an integer (got {})", what, type_name(v)), key);
}

int64_t get_int(const ojson& body, const char* key, int64_t lo, int64_t hi, int64_t fallback) {
  const ojson* v = json_field(body, key);
  if (!v) return fallback;
  const int64_t x = integral(*v, key, fmt::format("'{}'", key));
  if (x < lo || x > hi) throw invalid_request(fmt::format("'{}' must be in {}..{} (got {})", key, lo, hi, x), key);
  return x;
}

double get_number(const ojson& body, const char* key, double lo, double hi, double fallback) {
  const ojson* v = json_field(body, key);
  if (!v) return fallback;
  if (!v->is_number()) throw wrong_type(key, "a number", *v);
  double x = v->get<double>();
  if (!(x >= lo && x <= hi)) throw invalid_request(fmt::format("'{}' must be in [{}, {}] (got {})", key, lo, hi, x), key);
  return x;
}

bool get_bool(const ojson& body, const char* key, bool fallback) {
  const ojson* v = json_field(body, key);
  if (!v) return fallback;
  if (!v->is_boolean()) throw wrong_type(key, "a boolean", *v);
  return v->get<bool>();
}

std::vector<int64_t> token_ids(const ojson& arr, const char* key) {
  std::vector<int64_t> ids;
  ids.reserve(arr.size());
  const std::string what = fmt::format("a token id in '{}'", key);
  for (const auto& t : arr) ids.push_back(integral(t, key, what));  // outside the vocabulary: refused later
  return ids;
}


// An assistant's tool_calls (arguments parsed to an object when they are JSON text, as vLLM passes them to
// templates), a tool result's tool_call_id / name, an assistant's reasoning_content: copied into `msg`.
void add_message_extras(const ojson& m, const std::string& role, ojson& msg, const JsonLimits& limits) {
  if (const ojson* calls = json_field(m, "tool_calls"); calls && role == "assistant") {
    if (!calls->is_array()) throw wrong_type("tool_calls", "an array", *calls);
    ojson out = ojson::array();
    for (const ojson& call : *calls) {
      const ojson* fn = call.is_object() ? json_field(call, "function") : nullptr;
      const ojson* name = fn && fn->is_object() ? json_field(*fn, "name") : nullptr;
      if (!name || !name->is_string()) {
        throw invalid_request("each tool call needs {\"function\": {\"name\": ..., \"arguments\": ...}}", "messages");
      }
      ojson f = {{"name", *name}, {"arguments", ojson::object()}};
      if (const ojson* a = json_field(*fn, "arguments")) {
        ojson parsed = a->is_string() ? parse_bounded_json_or_discarded(a->get_ref<const std::string&>(), limits) : *a;
        f["arguments"] = parsed.is_discarded() ? *a : parsed;
      }
      ojson c = {{"type", "function"}, {"function", f}};
      if (const ojson* id = json_field(call, "id"); id && id->is_string()) c["id"] = *id;
      out.push_back(std::move(c));
    }
    msg["tool_calls"] = std::move(out);
  }
  for (const char* key : {"tool_call_id", "name", "reasoning_content"}) {
    const ojson* v = json_field(m, key);
    if (!v) continue;
    if (!v->is_string()) throw wrong_type(key, "a string", *v);
    msg[key] = *v;
  }
}

std::vector<ChatMessage> parse_messages(const ojson& body, const JsonLimits& limits) {
  const ojson* v = json_field(body, "messages");
  if (!v) throw invalid_request("'messages' is required", "messages");
  if (!v->is_array()) throw wrong_type("messages", "an array", *v);
  if (v->empty()) throw invalid_request("'messages' must not be empty", "messages");
  std::vector<ChatMessage> out;
  for (const auto& m : *v) {
    if (!m.is_object()) throw wrong_type("messages", "an array of objects", m);
    const ojson* role = json_field(m, "role");
    if (!role || !role->is_string()) throw invalid_request("each message needs a string 'role'", "messages");
    const std::string r = role->get<std::string>();
    if (r != "system" && r != "user" && r != "assistant" && r != "tool" && r != "developer") {
      throw invalid_request(fmt::format("unknown message role '{}'", r), "messages");
    }
    std::string content;
    const ojson* c = json_field(m, "content");
    ojson msg = {{"role", r}};
    if (c && c->is_string()) {
      content = c->get<std::string>();
    } else if (c && c->is_array()) {  // content parts: only text is supported
      for (const auto& part : *c) {
        if (!part.is_object()) throw wrong_type("content", "a string or an array of content parts", part);
        const ojson* type = json_field(part, "type");
        if (!type || !type->is_string()) throw invalid_request("each content part needs a string 'type'", "messages");
        if (*type != "text") {
          throw invalid_request(fmt::format("only text content parts are supported (got type '{}')",
                                            type->get<std::string>().substr(0, 64)), "messages");
        }
        const ojson* t = json_field(part, "text");
        if (!t || !t->is_string()) throw invalid_request("a text content part needs a string 'text'", "messages");
        content += t->get<std::string>();
      }
    } else if (c) {
      throw wrong_type("content", "a string or an array of content parts", *c);
    } else if (r != "assistant") {
      throw invalid_request("each message needs 'content'", "messages");
    }
    msg["content"] = content;  // null becomes "" as vLLM passes it (Qwen3's template tests `in content`)
    add_message_extras(m, r, msg, limits);
    out.push_back({r, std::move(content), std::move(msg)});
  }
  return out;
}

// logit_bias (OpenAI): {"token id": bias in [-100, 100], ...}; the ids are checked against the vocabulary later.
std::vector<std::pair<int64_t, double>> parse_logit_bias(const ojson& body) {
  std::vector<std::pair<int64_t, double>> out;
  const ojson* v = json_field(body, "logit_bias");
  if (!v) return out;
  if (!v->is_object()) throw wrong_type("logit_bias", "an object mapping token ids to biases", *v);
  std::unordered_set<int64_t> ids;
  for (const auto& [key, bias] : v->items()) {
    int64_t id = 0;
    const char* end = key.data() + key.size();
    auto [ptr, ec] = std::from_chars(key.data(), end, id);
    if (key.empty() || ec != std::errc() || ptr != end) {
      throw invalid_request(fmt::format("'logit_bias' keys must be token ids (got \"{}\")", key.substr(0, 64)),
                            "logit_bias");
    }
    if (!bias.is_number()) throw wrong_type("logit_bias", "an object whose values are numbers", bias);
    const double b = bias.get<double>();
    if (!(b >= -100.0 && b <= 100.0)) {
      throw invalid_request(fmt::format("'logit_bias' for token id {} must be in [-100, 100] (got {})", id, b),
                            "logit_bias");
    }
    if (!ids.insert(id).second) {  // "7" and "07"
      throw invalid_request(fmt::format("'logit_bias' gives token id {} twice", id), "logit_bias");
    }
    out.emplace_back(id, b);
  }
  return out;
}

void parse_common(const ojson& body, GenerationRequest& r) {
  if (!body.is_object()) throw invalid_request("the request body must be a JSON object");
  if (const ojson* m = json_field(body, "model")) {
    if (!m->is_string()) throw wrong_type("model", "a string", *m);
    r.model = m->get<std::string>();
  }
  constexpr int64_t kBig = int64_t{1} << 40;  // beyond any context; reported against the context later
  if (json_field(body, "max_completion_tokens")) r.max_tokens = get_int(body, "max_completion_tokens", 1, kBig, 0);
  else if (json_field(body, "max_tokens")) r.max_tokens = get_int(body, "max_tokens", 1, kBig, 0);
  r.temperature = get_number(body, "temperature", 0.0, 2.0, 1.0);
  r.top_p = get_number(body, "top_p", 1e-9, 1.0, 1.0);
  r.top_k = static_cast<int32_t>(get_int(body, "top_k", -1, 1 << 30, 0));
  if (r.top_k < 0) r.top_k = 0;
  r.min_p = get_number(body, "min_p", 0.0, 1.0, 0.0);
  if (const ojson* ids = json_field(body, "stop_token_ids")) {
    if (!ids->is_array()) throw wrong_type("stop_token_ids", "a list of token ids", *ids);
    r.stop_token_ids = token_ids(*ids, "stop_token_ids");
    if (r.stop_token_ids.size() > 64) throw invalid_request("at most 64 stop token ids", "stop_token_ids");
  }
  r.include_stop_str_in_output = get_bool(body, "include_stop_str_in_output", false);
  if (const ojson* u = json_field(body, "user")) {
    if (!u->is_string()) throw wrong_type("user", "a string", *u);
  }
  if (const ojson* s = json_field(body, "seed")) {  // any 64-bit value: unsigned up to 2^64 - 1, or a signed one
    r.seed = s->is_number_unsigned() ? s->get<uint64_t>() : static_cast<uint64_t>(integral(*s, "seed", "'seed'"));
  }
  if (const ojson* s = json_field(body, "stop")) {
    if (s->is_string()) {
      r.stop.push_back(s->get<std::string>());
    } else if (s->is_array()) {
      for (const auto& x : *s) {
        if (!x.is_string()) throw wrong_type("stop", "a string or a list of strings", x);
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      throw wrong_type("stop", "a string or a list of strings", *s);
    }
    if (r.stop.size() > kMaxStops) throw invalid_request(fmt::format("at most {} stop strings", kMaxStops), "stop");
    for (const auto& x : r.stop) {
      if (x.empty()) throw invalid_request("stop strings must not be empty", "stop");
    }
  }
  r.n = static_cast<int32_t>(get_int(body, "n", 1, kMaxN, 1));
  r.stream = get_bool(body, "stream", false);
  if (const ojson* so = json_field(body, "stream_options")) {
    if (!so->is_object()) throw wrong_type("stream_options", "an object", *so);
    if (!r.stream) throw invalid_request("'stream_options' is only allowed with 'stream': true", "stream_options");
    r.include_usage = get_bool(*so, "include_usage", false);
  }
  r.presence_penalty = get_number(body, "presence_penalty", -2.0, 2.0, 0.0);
  r.frequency_penalty = get_number(body, "frequency_penalty", -2.0, 2.0, 0.0);
  if (const ojson* v = json_field(body, "repetition_penalty")) {
    if (!v->is_number()) throw wrong_type("repetition_penalty", "a number", *v);
    const double x = v->get<double>();
    if (!(static_cast<float>(x) > 0.0f) || !(x <= 1e30)) {  // a float the sampler takes: finite, not 0 (1e-320 is)
      throw invalid_request(fmt::format("'repetition_penalty' must be in (0, 1e30] (1 = off; got {})", x),
                            "repetition_penalty");
    }
    r.repetition_penalty = x;
  }
  r.logit_bias = parse_logit_bias(body);
  r.ignore_eos = get_bool(body, "ignore_eos", false);
  r.speculative = get_bool(body, "speculative", true);
  r.min_tokens = static_cast<int32_t>(get_int(body, "min_tokens", 0, 1 << 30, 0));
  if (r.max_tokens && r.min_tokens > *r.max_tokens) {
    throw invalid_request(fmt::format("min_tokens ({}) must not exceed max_tokens ({})", r.min_tokens, *r.max_tokens),
                          "min_tokens");
  }
}

// OpenAI fields this server does not implement yet (issue M): refused with a 400 naming the field when they ask for
// something, never silently ignored; their default values (what a client sends when it means "off") pass.
void refuse_unsupported(const ojson& body, bool chat) {
  auto refuse = [](const char* name) {
    throw invalid_request(fmt::format("'{}' is not supported by this server", name), name);
  };
  auto is = [&](const char* name, auto&& is_default) {
    const ojson* f = json_field(body, name);
    if (f && !f->is_null() && !is_default(*f)) refuse(name);
  };
  is("echo", [](const ojson& v) { return v.is_boolean() && !v.get<bool>(); });
  is("suffix", [](const ojson& v) { return v.is_string() && v.get<std::string>().empty(); });
  if (json_field(body, "best_of")) {  // >= 1 (OpenAI); > n would mean generating more than returned
    const int64_t best_of = get_int(body, "best_of", 1, std::numeric_limits<int64_t>::max(), 1);
    const int64_t n = get_int(body, "n", 1, kMaxN, 1);  // every choice generated is returned: none is ranked out
    if (best_of > n) {
      throw invalid_request(fmt::format("'best_of' > 'n' ({} > {}) is not supported by this server: it returns every "
                                        "choice it generates (best_of must be <= n)",
                                        best_of, n),
                            "best_of");
    }
  }
  if (!chat) {  // tools belong to chat
    is("tools", [](const ojson& v) { return v.is_array() && v.empty(); });
    is("tool_choice", [](const ojson& v) { return v.is_string() && v.get<std::string>() == "none"; });
    is("chat_template_kwargs", [](const ojson& v) { return v.is_object() && v.empty(); });
  }
  is("functions", [](const ojson& v) { return v.is_array() && v.empty(); });
  auto never = [](const ojson&) { return false; };
  for (const char* f : {"guided_grammar", "grammar", "allowed_token_ids", "prompt_logprobs", "truncate_prompt_tokens",
                        "chat_template", "audio", "web_search_options"}) {
    is(f, never);
  }
  is("bad_words", [](const ojson& v) { return v.is_array() && v.empty(); });
  is("use_beam_search", [](const ojson& v) { return v.is_boolean() && !v.get<bool>(); });
  is("continue_final_message", [](const ojson& v) { return v.is_boolean() && !v.get<bool>(); });
  is("modalities", [](const ojson& v) { return v == ojson::array({"text"}); });
  is("function_call", [](const ojson& v) { return v.is_string() && v.get<std::string>() == "none"; });
}

}  // namespace

GenerationRequest parse_completion_request(const ojson& body, const JsonLimits& limits) {
  GenerationRequest r;
  parse_common(body, r);
  refuse_unsupported(body, false);
  r.output = parse_structured_output(body, limits);
  r.prompts = parse_prompt_inputs(body, "prompt");
  if (json_field(body, "logprobs") && json_field(body, "logprobs")->is_boolean()) {
    throw wrong_type("logprobs", "an integer", *json_field(body, "logprobs"));
  }
  r.logprobs = static_cast<int32_t>(get_int(body, "logprobs", 0, kMaxLogprobs, -1));
  return r;
}

GenerationRequest parse_chat_request(const ojson& body, const JsonLimits& limits) {
  GenerationRequest r;
  r.chat = true;
  parse_common(body, r);
  refuse_unsupported(body, true);
  r.messages = parse_messages(body, limits);
  r.tools = parse_tool_request(body);
  r.output = parse_structured_output(body, limits);
  r.add_generation_prompt = get_bool(body, "add_generation_prompt", true);
  const bool want = get_bool(body, "logprobs", false);
  const int64_t top = get_int(body, "top_logprobs", 0, kMaxLogprobs, -1);
  if (top >= 0 && !want) throw invalid_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  r.logprobs = want ? static_cast<int32_t>(std::max<int64_t>(top, 0)) : -1;
  return r;
}

namespace {

void parse_model(const ojson& body, std::string& model) {
  if (!body.is_object()) throw invalid_request("the request body must be a JSON object");
  if (const ojson* m = json_field(body, "model")) {
    if (!m->is_string()) throw wrong_type("model", "a string", *m);
    model = m->get<std::string>();
  }
}

}  // namespace

TokenizeRequest parse_tokenize_request(const ojson& body, const JsonLimits& limits) {
  TokenizeRequest r;
  parse_model(body, r.model);
  const ojson* prompt = json_field(body, "prompt");
  const ojson* messages = json_field(body, "messages");
  if (prompt && messages) throw invalid_request("give either 'prompt' or 'messages', not both", "prompt");
  if (!prompt && !messages) throw invalid_request("'prompt' (a string) or 'messages' is required", "prompt");
  r.add_special_tokens = get_bool(body, "add_special_tokens", true);
  r.return_token_strs = get_bool(body, "return_token_strs", false);
  if (prompt) {
    if (!prompt->is_string()) throw wrong_type("prompt", "a string", *prompt);
    r.prompt = prompt->get<std::string>();
    return r;
  }
  r.chat = true;
  r.messages = parse_messages(body, limits);
  r.add_generation_prompt = get_bool(body, "add_generation_prompt", true);
  // what the chat path does not do is refused by name here too, never ignored
  auto refuse = [](const char* name) {
    throw invalid_request(fmt::format("'{}' is not supported by this server", name), name);
  };
  r.tools = parse_tool_request(body);
  if (json_field(body, "chat_template")) refuse("chat_template");
  if (get_bool(body, "continue_final_message", false)) refuse("continue_final_message");
  return r;
}

DetokenizeRequest parse_detokenize_request(const ojson& body) {
  DetokenizeRequest r;
  parse_model(body, r.model);
  const ojson* t = json_field(body, "tokens");
  if (!t) throw invalid_request("'tokens' is required", "tokens");
  if (!t->is_array()) throw wrong_type("tokens", "a list of token ids", *t);
  r.tokens = token_ids(*t, "tokens");
  return r;
}

std::vector<PromptInput> parse_prompt_inputs(const ojson& body, const char* key) {
  const ojson* v = json_field(body, key);
  if (!v) throw invalid_request(fmt::format("'{}' is required", key), key);
  const std::string empty = fmt::format("the {} is empty", key);
  std::vector<PromptInput> out;
  auto text = [&](const ojson& s) {
    if (s.get_ref<const std::string&>().empty()) throw invalid_request(empty, key);
    out.push_back({s.get<std::string>(), {}, false});
  };
  if (v->is_string()) {
    text(*v);
  } else if (v->is_array()) {
    if (v->empty()) throw invalid_request(empty, key);
    if ((*v)[0].is_number()) {
      out.push_back({"", token_ids(*v, key), true});
    } else {
      for (const auto& p : *v) {
        if (p.is_string()) text(p);
        else if (p.is_array() && !p.empty()) out.push_back({"", token_ids(p, key), true});
        else if (p.is_array()) throw invalid_request(empty, key);
        else throw wrong_type(key, "a string, a list of strings or a list of token ids", p);
      }
    }
  } else {
    throw wrong_type(key, "a string, a list of strings or a list of token ids", *v);
  }
  return out;
}

}  // namespace slimkv
