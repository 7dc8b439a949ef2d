// Issue R3 (medium: big answers): the non-streamed response written from per-token records is byte for byte the
// JSON tree's dump it replaces — completions and chat, with and without logprobs, invalid UTF-8 and duplicate
// top-logprob texts, tool-call replies — and each choice's records are released once written.
#include <gtest/gtest.h>

#include <random>

#include "server/response_text.h"

namespace slimkv {
namespace {

using nlohmann::json;

std::vector<TokenLogprobEntry> random_entries(std::mt19937& rng, int n) {
  const std::vector<std::string> pieces = {"the", " cat", "\xe2\x82", "\xac", "\"q\"", "\\", "\n", "\x01", "é", "",
                                           "<|im_end|>", "\xff\xfe", " a"};
  std::uniform_int_distribution<size_t> pick(0, pieces.size() - 1);
  std::uniform_real_distribution<float> lp(-30.0f, 0.0f);
  std::vector<TokenLogprobEntry> out;
  for (int i = 0; i < n; ++i) {
    TokenLogprobEntry e{pieces[pick(rng)], lp(rng), {}};
    const int top = static_cast<int>(rng() % 6);
    for (int k = 0; k < top; ++k) e.top.emplace_back(pieces[pick(rng)], lp(rng));  // texts may repeat
    out.push_back(std::move(e));
  }
  return out;
}

TEST(ResponseText, MatchesTheTreeItReplaces) {
  std::mt19937 rng(7);
  for (bool chat : {false, true}) {
    for (bool with_logprobs : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "chat " << chat << " logprobs " << with_logprobs);
      ResponseHeader h{chat ? "chatcmpl-1" : "cmpl-1", 1796000000, "m\"odel", chat};
      std::vector<std::vector<TokenLogprobEntry>> records;
      for (int i = 0; i < 4; ++i) records.push_back(random_entries(rng, i * 7));
      json tree = json::array();
      std::vector<FinishedChoice> finished;
      for (int i = 0; i < 4; ++i) {
        const std::string text = i == 2 ? "\"logprobs\":null in the text" : "some \xff text " + std::to_string(i);
        const json lp = with_logprobs ? logprobs_json(chat, records[i], 0) : json(nullptr);
        if (chat && i == 3) {
          ChatReply r;
          r.tool_calls = json::array({tool_call_json("call_1", "f", "{\"logprobs\":null}")});
          tree.push_back(chat_reply_choice_json(i, r, "tool_calls", lp));
          finished.push_back({chat_reply_choice_json(i, r, "tool_calls", nullptr), with_logprobs ? &records[i] : nullptr});
        } else {
          tree.push_back(choice_json(chat, i, text, "length", lp));
          finished.push_back({choice_json(chat, i, text, "length", nullptr), with_logprobs ? &records[i] : nullptr});
        }
      }
      const Usage u{12, 34, 5};
      const std::string want = dump_json(response_json(h, tree, u));
      EXPECT_EQ(response_text(h, finished, u), want);
      if (with_logprobs) {
        for (const auto& r : records) EXPECT_TRUE(r.empty());  // released once written
      }
    }
  }
}

TEST(ResponseText, LogprobsTextFitsItsBound) {
  std::mt19937 rng(11);
  for (bool chat : {false, true}) {
    const auto entries = random_entries(rng, 500);
    std::string out;
    append_logprobs_json(out, chat, entries, 17);
    EXPECT_EQ(out, dump_json(logprobs_json(chat, entries, 17)));
    EXPECT_LE(out.size(), logprobs_text_bound(entries));
  }
}

}  // namespace
}  // namespace slimkv
