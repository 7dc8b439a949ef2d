#include "server/generation_session.h"

#include "server/response_text.h"

#include <optional>

#include <atomic>
#include <random>

#include "jinja/template_error.h"
#include "server/api_error.h"

namespace slimkv {
namespace {

std::string new_id(bool chat) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  return fmt::format("{}-{:016x}{:04x}", chat ? "chatcmpl" : "cmpl", salt, counter++ & 0xffff);
}

const char* finish_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    default: return "abort";
  }
}

}  // namespace

// The chat prompt; a template that refuses the messages is the client's error: 400 with the template's own rule
// (raise_exception's text, e.g. "Conversation roles must alternate user/assistant/user/assistant/..."), and any
// other render error (undefined value, type error, sandbox limit) a 400 saying so, never a 500.
std::string render_chat_prompt(const ChatTemplate& t, const std::vector<ChatMessage>& messages,
                               bool add_generation_prompt, const ToolRequest& tools) {
  try {
    return t.render(messages, add_generation_prompt, tools.tools, tools.template_kwargs);
  } catch (const jinja::TemplateError& e) {
    if (e.kind() == jinja::ErrorKind::Raised) throw invalid_request(e.what(), "messages");
    throw invalid_request(fmt::format("the chat template ({}) cannot render these messages: {} ({})", t.name(),
                                      e.what(), jinja::error_kind_name(e.kind())),
                          "messages");
  }
}

std::vector<int32_t> encode_prompt_text(const ServeContext& ctx, const std::string& text, const char* field,
                                        bool add_special) {
  // A text far longer than the context can hold is refused before it is tokenized (an 8 MB prompt took 3.9 s to
  // tokenize and was then refused): it has at least bytes / max_token_bytes tokens; a factor 4 of slack covers
  // normalisation (a byte of input may become a longer piece).
  const Tokenizer& tok = *ctx.model->tokenizer;
  const size_t bytes_per_token_bound = tok.max_token_bytes() * 4;
  if (text.size() > static_cast<size_t>(ctx.max_model_len) * bytes_per_token_bound) {
    throw invalid_request(fmt::format("This model's maximum context length is {} tokens. However, your {} has {} "
                                      "bytes, at least {} tokens. Please reduce the length of the {}.",
                                      ctx.max_model_len, field, text.size(), text.size() / bytes_per_token_bound,
                                      field),
                          field);
  }
  return tok.encode(text, EncodeOptions{add_special, /*parse_special=*/true});  // as vLLM and llama.cpp do
}

// What the request's output must match (response_format / guided_*), as the engine's per-choice constraint.
// How a chat choice's text becomes its reply: tools parsed only when offered with tool_choice auto; reasoning
// whenever the template has a reasoning syntax (llama.cpp's default); forced tool calls as vLLM does them.
ReplyMode reply_mode(const ServeContext& ctx, const GenerationRequest& req, const std::string& rendered) {
  ReplyMode m;
  m.format.reasoning = ctx.chat_format.reasoning;
  if (req.tools.has_tools() && req.tools.choice == ToolRequest::Choice::kAuto) m.format.tools = ctx.chat_format.tools;
  m.thinking_in_prompt = prompt_opens_thinking(ctx.chat_format, rendered);
  m.forced = req.tools.choice;
  m.forced_name = req.tools.named;
  return m;
}

// The special tokens a reply parser must see spelled out: the format's markers that are single special tokens of
// this vocabulary (DeepSeek's tool-call markers, harmony's, <|python_tag|>), never EOS or a stop token.
std::vector<int32_t> spelled_markers(const Tokenizer& tok, const ReplyMode& m, const RequestParams& rp) {
  namespace mk = chat_markers;
  std::vector<int32_t> out;
  if (m.format.tools == ToolCallFormat::kNone && m.format.reasoning != ReasoningFormat::kHarmony) return out;
  for (std::string_view marker : {mk::kThinkOpen, mk::kThinkClose, mk::kHermesOpen, mk::kHermesClose, mk::kPythonTag,
                                  mk::kDsCallsBegin, mk::kDsCallsEnd, mk::kDsCallBegin, mk::kDsCallEnd, mk::kDsSep,
                                  mk::kMistralCalls, mk::kMistralArgs, mk::kMistralId, mk::kHarmonyStart,
                                  mk::kHarmonyChannel, mk::kHarmonyMessage, mk::kHarmonyConstrain, mk::kHarmonyEnd,
                                  mk::kHarmonyCall, mk::kHarmonyReturn}) {
    const std::vector<int32_t> ids = tok.encode(marker, EncodeOptions{false, /*parse_special=*/true});
    if (ids.size() != 1 || ids[0] == rp.eos_id || tok.token_text(ids[0]) != marker) continue;
    if (std::find(rp.stop_token_ids.begin(), rp.stop_token_ids.end(), ids[0]) != rp.stop_token_ids.end()) continue;
    if (!tok.decode_token(ids[0], ids[0]).empty()) continue;  // an ordinary token: it prints itself already
    out.push_back(ids[0]);
  }
  return out;
}

// tool_choice required / named force the output to a tool call's JSON (vLLM's way).
TokenConstraintFactory output_constraint(const ServeContext& ctx, const GenerationRequest& req) {
  const bool forced = req.tools.choice == ToolRequest::Choice::kRequired ||
                      req.tools.choice == ToolRequest::Choice::kNamed;
  if (req.output.kind == StructuredOutput::Kind::kNone && !forced) return {};
  const std::string field = forced ? "tool_choice" : req.output.field;
  if (forced && req.output.kind != StructuredOutput::Kind::kNone) {
    throw invalid_request(fmt::format("'{}' and a forced 'tool_choice' cannot be combined", req.output.field), field);
  }
  if (!ctx.constraints) throw invalid_request(fmt::format("'{}' is not supported by this server", field), field);
  TokenConstraintFactory f = forced ? ctx.constraints->for_tool_choice(req.tools) : ctx.constraints->for_output(req.output);
  // A grammar whose start is already too ambiguous fails when a choice's matcher is made (on the engine's side, where
  // the field is not known): made once here, so the refusal names the field.
  try {
    (void)f();
  } catch (const Error& e) {
    throw invalid_request(fmt::format("'{}': {}", forced ? "tools" : field, e.what()), forced ? "tools" : field);
  }
  return f;
}

GenerationSession::GenerationSession(const ServeContext& ctx, GenerationRequest req,
                                     std::shared_ptr<const LoraAdapter> lora)
    : ctx_(ctx), req_(std::move(req)) {
  const Tokenizer& tok = *ctx_.model->tokenizer;
  const int32_t vocab = ctx_.model->config.vocab_size;
  header_ = {new_id(req_.chat), std::chrono::duration_cast<std::chrono::seconds>(
                                    std::chrono::system_clock::now().time_since_epoch()).count(),
             lora ? lora->name : ctx_.model_name, req_.chat};  // the answer names what served it (vLLM's way)
  const TokenConstraintFactory constraint = output_constraint(ctx_, req_);  // compiled once, before any tokenizing
  std::vector<std::pair<int32_t, float>> logit_bias;  // checked before any tokenizing
  for (const auto& [id, bias] : req_.logit_bias) {
    if (id < 0 || id >= vocab) {
      throw invalid_request(fmt::format("'logit_bias' token id {} is outside the vocabulary (0..{})", id, vocab - 1),
                            "logit_bias");
    }
    logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(bias));
  }
  std::vector<std::vector<int32_t>> prompts;  // [prompts] token ids
  const char* field = req_.chat ? "messages" : "prompt";
  auto encode = [&](const std::string& text) { return encode_prompt_text(ctx_, text, field, true); };
  if (req_.chat) {
    const std::string rendered =
        render_chat_prompt(ctx_.chat_template, req_.messages, req_.add_generation_prompt, req_.tools);
    reply_mode_ = reply_mode(ctx_, req_, rendered);
    prompts.push_back(encode(rendered));
  } else {
    for (const auto& p : req_.prompts) {
      if (!p.is_ids) {
        prompts.push_back(encode(p.text));
        continue;
      }
      std::vector<int32_t> ids;
      for (int64_t t : p.ids) {
        if (t < 0 || t >= vocab) {
          throw invalid_request(fmt::format("token id {} is outside the vocabulary (0..{})", t, vocab - 1), "prompt");
        }
        ids.push_back(static_cast<int32_t>(t));
      }
      prompts.push_back(std::move(ids));
    }
  }
  const uint64_t seed = req_.seed.value_or(std::random_device{}());
  std::optional<std::vector<int32_t>> spelled;  // the format's special-token markers, found once per request
  JobSpec spec;
  int64_t cost = 0;  // what the request asks the engine for: tokens of every choice, each with its logprobs
  for (size_t p = 0; p < prompts.size(); ++p) {
    const int64_t n_prompt = static_cast<int64_t>(prompts[p].size());
    if (n_prompt == 0) throw invalid_request("the prompt is empty", field);
    const int64_t max_tokens = req_.max_tokens.value_or(req_.chat ? std::max<int64_t>(1, ctx_.max_model_len - n_prompt)
                                                                  : 16);
    if (n_prompt + max_tokens > ctx_.max_model_len) {
      throw invalid_request(
          fmt::format("This model's maximum context length is {} tokens. However, you requested {} tokens ({} in the "
                      "{}, {} in the completion). Please reduce the length of the {} or completion.",
                      ctx_.max_model_len, n_prompt + max_tokens, n_prompt, field,
                      max_tokens, field),
          field);
    }
    cost += static_cast<int64_t>(req_.n) * max_tokens * (1 + std::max(req_.logprobs, 0));
    if (cost > ctx_.max_request_cost) {
      throw invalid_request(fmt::format("the request asks for {} or more units of work (choices x max_tokens x (1 + "
                                        "logprobs)); this server takes at most {} (--max-request-cost)",
                                        cost, ctx_.max_request_cost),
                            "max_tokens");
    }
    for (int32_t j = 0; j < req_.n; ++j) {
      RequestParams rp;
      rp.max_tokens = static_cast<int32_t>(max_tokens);
      rp.eos_id = tok.eos_id();
      rp.ignore_eos = req_.ignore_eos;
      rp.speculative = req_.speculative;
      rp.min_tokens = req_.min_tokens;
      rp.logprobs = req_.logprobs;
      rp.sampling.temperature = static_cast<float>(req_.temperature);
      rp.sampling.top_p = static_cast<float>(req_.top_p);
      rp.sampling.top_k = req_.top_k;
      rp.sampling.min_p = static_cast<float>(req_.min_p);
      rp.sampling.presence_penalty = static_cast<float>(req_.presence_penalty);
      rp.sampling.frequency_penalty = static_cast<float>(req_.frequency_penalty);
      rp.sampling.repetition_penalty = static_cast<float>(req_.repetition_penalty);
      rp.sampling.logit_bias = logit_bias;
      rp.constraint = constraint;
      rp.lora = lora;
      for (int64_t id : req_.stop_token_ids) {
        if (id < 0 || id >= vocab) {
          throw invalid_request(fmt::format("stop token id {} is outside the vocabulary (0..{})", id, vocab - 1),
                                "stop_token_ids");
        }
        rp.stop_token_ids.push_back(static_cast<int32_t>(id));
      }
      rp.sampling.seed = seed + choices_.size();
      Choice c;
      c.prompt_index = static_cast<int32_t>(p);
      c.prev_token = prompts[p].back();
      c.text = std::make_unique<CompletionText>(tok, c.prev_token, req_.stop, req_.include_stop_str_in_output);
      if (reply_mode_.active()) {
        c.reply = std::make_unique<ChatReplyBuilder>(reply_mode_, random_call_ids());
        if (!spelled) spelled = spelled_markers(tok, reply_mode_, rp);  // the same for every choice
        c.text->spell(*spelled);
      }
      choices_.push_back(std::move(c));
      spec.prompts.push_back(prompts[p]);
      spec.params.push_back(rp);
    }
  }
  auto r = ctx_.service->submit(std::move(spec));
  if (auto* refusal = std::get_if<Refusal>(&r)) {
    if (refusal->queue_full) throw server_overloaded(refusal->message);
    throw invalid_request(refusal->message);
  }
  job_ = std::get<std::shared_ptr<Job>>(r);
}

GenerationSession::~GenerationSession() { cancel(); }

void GenerationSession::cancel() {
  if (job_ && !job_->finished()) ctx_.service->cancel(*job_);
}

std::string GenerationSession::apply(Choice& c, const ChoiceEvent& e, std::vector<TokenLogprobEntry>* new_logprobs) {
  if (!c.finish_reason.empty()) {  // after a stop string: later tokens are not output; keep the final counts
    if (e.finish != FinishReason::None) {
      c.num_prompt_tokens = e.num_prompt_tokens;
      c.num_cached_tokens = e.num_cached_tokens;
    }
    return "";
  }
  std::string delta;
  if (e.token >= 0) {
    ++c.num_tokens;
    if (req_.logprobs >= 0) {
      const Tokenizer& tok = *ctx_.model->tokenizer;
      TokenLogprobEntry entry{tok.decode_token(c.prev_token, e.token), e.logprob, {}};
      for (const auto& [id, lp] : e.top_logprobs) entry.top.emplace_back(tok.decode_token(c.prev_token, id), lp);
      c.logprobs.push_back(entry);
      if (new_logprobs) new_logprobs->push_back(std::move(entry));
    }
    c.prev_token = e.token;
    delta = c.text->push(e.token);
    if (c.text->stopped()) {
      c.finish_reason = "stop";
      ctx_.service->cancel_choice(*job_, static_cast<int32_t>(&c - choices_.data()));
    }
  }
  if (e.finish != FinishReason::None) {
    c.num_prompt_tokens = e.num_prompt_tokens;
    c.num_cached_tokens = e.num_cached_tokens;
    if (c.finish_reason.empty()) {
      delta += c.text->finish();
      c.finish_reason = finish_name(e.finish);
    }
  }
  c.text_offset += static_cast<int64_t>(delta.size());
  return delta;
}

bool GenerationSession::all_finished() const {
  for (const auto& c : choices_) {
    if (c.finish_reason.empty()) return false;
  }
  return true;
}

Usage GenerationSession::usage() const {
  Usage u;
  std::vector<bool> counted(req_.chat ? 1 : req_.prompts.size(), false);
  for (const auto& c : choices_) {
    u.completion_tokens += c.num_tokens;
    if (!counted[c.prompt_index]) {  // a prompt counts once however many choices share it
      counted[c.prompt_index] = true;
      u.prompt_tokens += c.num_prompt_tokens;
      u.cached_tokens += c.num_cached_tokens;
    }
  }
  return u;
}

std::string GenerationSession::run_to_completion(const std::function<bool()>& client_gone) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(ctx_.request_timeout_s * 1000));
  // A choice stopped by a stop string still needs its finishing event (prompt and cached counts).
  auto settled = [&] { return job_->drained() && all_finished(); };
  while (!settled()) {
    const auto tick = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
    auto events = job_->wait(client_gone ? tick : deadline);
    if (client_gone && client_gone()) {
      cancel();
      throw ApiError(499, "the client closed the connection", "cancelled");
    }
    if (events.empty() && std::chrono::steady_clock::now() >= deadline) {
      cancel();
      throw ApiError(504, fmt::format("the request did not finish within --request-timeout {} s", ctx_.request_timeout_s),
                     "timeout");
    }
    for (const auto& e : events) apply(choices_[e.choice], e, nullptr);
  }
  std::vector<FinishedChoice> out;
  for (size_t i = 0; i < choices_.size(); ++i) {
    Choice& c = choices_[i];
    FinishedChoice f;
    f.logprobs = req_.logprobs >= 0 ? &c.logprobs : nullptr;
    if (c.reply) {
      const ChatReply reply = c.reply->reply(c.text->text());
      f.choice = chat_reply_choice_json(static_cast<int32_t>(i), reply, finish_reason_of(c), nullptr);
    } else {
      f.choice = choice_json(req_.chat, static_cast<int32_t>(i), c.text->text(), c.finish_reason, nullptr);
    }
    out.push_back(std::move(f));
  }
  done_ = true;
  return response_text(header_, out, usage());
}

std::string GenerationSession::finish_reason_of(const Choice& c) const {
  return c.reply && c.reply->called_tools() && c.finish_reason == "stop" ? "tool_calls" : c.finish_reason;
}

// A parsed chat choice's chunks: the delta objects its text settles (the token's logprobs on the first), and when
// the choice has ended whatever was held back, then the finishing chunk.
std::string GenerationSession::stream_chat_deltas(Choice& c, int32_t index, const std::string& delta,
                                                  nlohmann::json lp) {
  std::string out;
  std::vector<nlohmann::json> deltas = c.reply->feed(delta);
  if (!c.finish_reason.empty()) {
    for (auto& d : c.reply->finish()) deltas.push_back(std::move(d));
  }
  for (auto& d : deltas) {
    out += sse_event(delta_chunk_json(header_, index, std::move(d), lp, ""));
    lp = nullptr;
  }
  if (!c.finish_reason.empty()) {
    out += sse_event(delta_chunk_json(header_, index, nlohmann::json::object(), nullptr, finish_reason_of(c)));
  }
  return out;
}

std::string GenerationSession::next_events(int wait_ms) {
  if (done_) return "";
  std::string out;
  const std::string role = "assistant";
  if (req_.chat) {  // the first chunk of each choice carries the role
    for (size_t i = 0; i < choices_.size(); ++i) {
      if (choices_[i].role_sent) continue;
      choices_[i].role_sent = true;
      out += sse_event(chunk_json(header_, static_cast<int32_t>(i), &role, "", nullptr, ""));
    }
  }
  auto events = job_->drained() ? std::vector<ChoiceEvent>{}
                             : job_->wait(std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms));
  for (const auto& e : events) {
    Choice& c = choices_[e.choice];
    const bool had_finished = !c.finish_reason.empty();
    const int64_t offset0 = c.text_offset;
    std::vector<TokenLogprobEntry> lps;
    std::string delta = apply(c, e, &lps);
    nlohmann::json lp = req_.logprobs >= 0 && !lps.empty() ? logprobs_json(req_.chat, lps, offset0) : nlohmann::json(nullptr);
    if (had_finished) continue;
    if (c.reply) {
      out += stream_chat_deltas(c, e.choice, delta, std::move(lp));
      continue;
    }
    if (e.token >= 0) {  // exactly one chunk per generated token (its text may be held back: "")
      out += sse_event(chunk_json(header_, e.choice, nullptr, delta, lp, ""));
    }
    if (!c.finish_reason.empty()) {  // the choice ended here: any held-back text, and the reason
      out += sse_event(chunk_json(header_, e.choice, nullptr, e.token >= 0 ? "" : delta, nullptr, c.finish_reason));
    }
  }
  if (job_->drained() && all_finished()) {
    if (req_.include_usage && !usage_sent_) out += sse_event(usage_chunk_json(header_, usage()));
    usage_sent_ = true;
    out += "data: [DONE]\n\n";
    done_ = true;
  }
  return out;
}

}  // namespace slimkv
