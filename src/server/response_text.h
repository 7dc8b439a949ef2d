// A finished non-streamed response written as its JSON text directly — byte for byte what dump_json(response_json(...))
// gives — with each choice's logprobs serialized from its compact per-token records one entry at a time, so that
// the answer is never held as a JSON tree (n x max_tokens x top_logprobs entries were ~10x the answer's bytes).
// Pure functions over plain data. Must not know: the engine, sockets or how the tokens were produced.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/openai_response.h"

namespace slimkv {

struct FinishedChoice {
  nlohmann::json choice;                          // choice_json / chat_reply_choice_json with "logprobs": null
  std::vector<TokenLogprobEntry>* logprobs = nullptr;  // null: none; else written in, then freed
};

// Appends dump_json(logprobs_json(chat, entries, text_offset0)), entry by entry.
void append_logprobs_json(std::string& out, bool chat, const std::vector<TokenLogprobEntry>& entries,
                          int64_t text_offset0);
// dump_json(response_json(h, choices with their logprobs, u)). Each choice's records are released once written.
std::string response_text(const ResponseHeader& h, std::vector<FinishedChoice>& choices, const Usage& u);
// Bytes that response_text may write for these records, or more (a reservation: pages never written cost nothing).
size_t logprobs_text_bound(const std::vector<TokenLogprobEntry>& entries);

}  // namespace slimkv
