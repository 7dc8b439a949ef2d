// Every chat case of every family in ../shared/data/real-tokenizers rendered with the family's real template and
// compared byte for byte with chat_expected.jsonl (Python jinja2 as transformers runs it; README.md there). The
// context mirrors tools/render_chat.py: messages, tools (None when absent), documents=None, add_generation_prompt,
// the config's special tokens and the case's kwargs; strftime_now's clock is frozen at 2026-01-01 00:00.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "jinja/template.h"
#include "test_paths.h"

namespace slimkv::test {
namespace {

using ojson = nlohmann::ordered_json;

std::string rt_dir() { return data_dir() + "/real-tokenizers"; }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string family_template(const std::string& fam, const ojson& cfg) {
  std::string p = rt_dir() + "/" + fam + "/chat_template.jinja";
  if (exists(p)) return read_text(p);
  return cfg.at("chat_template").get<std::string>();
}

// PreTrainedTokenizerBase.special_tokens_map: the set special tokens as strings (AddedToken dicts reduced to content).
void add_special_tokens(const ojson& cfg, ojson& ctx) {
  auto tok_str = [](const ojson& v) -> ojson { return v.is_object() ? v.value("content", ojson()) : v; };
  for (const char* k : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
    if (!cfg.contains(k)) continue;
    ojson v = tok_str(cfg[k]);
    if (!v.is_null()) ctx[k] = v;
  }
  if (cfg.contains("additional_special_tokens") && !cfg["additional_special_tokens"].empty()) {
    ojson extra = ojson::array();
    for (const auto& x : cfg["additional_special_tokens"]) extra.push_back(tok_str(x));
    ctx["additional_special_tokens"] = extra;
  }
}

std::tm frozen_clock() {  // 2026-01-01 00:00:00, a Thursday
  std::tm tm{};
  tm.tm_year = 126;
  tm.tm_mon = 0;
  tm.tm_mday = 1;
  tm.tm_wday = 4;
  tm.tm_yday = 0;
  return tm;
}

struct FamilyResult {
  int matched = 0, total = 0;
};

FamilyResult check_family(const std::string& fam) {
  FamilyResult r;
  const std::string dir = rt_dir() + "/" + fam;
  ojson cfg = ojson::parse(read_text(dir + "/tokenizer_config.json"));
  ojson cases = ojson::parse(read_text(rt_dir() + "/chat-cases.json"));
  std::map<std::string, ojson> expected;
  std::ifstream in(dir + "/chat_expected.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      ojson e = ojson::parse(line);
      expected[e["id"].get<std::string>()] = e;
    }
  }
  jinja::Options opt;
  opt.now = frozen_clock;
  auto tpl = jinja::Template::parse(family_template(fam, cfg), opt);
  for (const auto& c : cases) {
    const std::string id = c["id"].get<std::string>();
    SCOPED_TRACE(fam + "/" + id);
    ++r.total;
    ojson ctx = ojson::object();
    ctx["messages"] = c["messages"];
    ctx["tools"] = c.contains("tools") ? c["tools"] : ojson();
    ctx["documents"] = ojson();
    ctx["add_generation_prompt"] = c["add_generation_prompt"];
    add_special_tokens(cfg, ctx);
    if (c.contains("kwargs")) {
      for (auto it = c["kwargs"].begin(); it != c["kwargs"].end(); ++it) ctx[it.key()] = it.value();
    }
    const ojson& want = expected.at(id);
    try {
      std::string got = tpl.render(ctx);
      if (want.contains("rendered")) {
        EXPECT_EQ(got, want["rendered"].get<std::string>());
        r.matched += got == want["rendered"].get<std::string>();
      } else {
        ADD_FAILURE() << "expected the error: " << want["error"];
      }
    } catch (const jinja::TemplateError& e) {
      if (want.contains("error")) {
        EXPECT_EQ(e.kind(), jinja::ErrorKind::Raised) << e.what();
        EXPECT_EQ(std::string(e.what()), want["error"].get<std::string>());
        r.matched += std::string(e.what()) == want["error"].get<std::string>();
      } else {
        ADD_FAILURE() << "unexpected error: " << e.what();
      }
    }
  }
  return r;
}

class ChatTemplateFamily : public ::testing::TestWithParam<const char*> {};

TEST_P(ChatTemplateFamily, RendersEveryCaseLikeJinja2) {
  SKIP_IF_MISSING(rt_dir() + "/chat-cases.json");
  SKIP_IF_MISSING(rt_dir() + "/" + GetParam() + "/chat_expected.jsonl");
  FamilyResult r = check_family(GetParam());
  EXPECT_EQ(r.total, 16);
  EXPECT_EQ(r.matched, r.total);
  std::printf("%s: %d/%d chat cases match jinja2\n", GetParam(), r.matched, r.total);
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, ChatTemplateFamily,
                         ::testing::Values("llama3", "llama3_nobos", "qwen3", "deepseek_v3", "gemma3", "gpt_oss",
                                           "mistral"));

}  // namespace
}  // namespace slimkv::test
