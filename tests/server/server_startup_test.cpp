// Issue R's start-up and admission defects on the real binary: a failed start exits with its error (never a hang
// or an abort), a taken port is an error (no silent second server), and a request that can never be admitted is a
// 400 while a busy queue is a 429.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <thread>

#include "server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

struct Exit {
  int code = -1;  // exit status; 137 = killed by the watchdog (a hang)
  std::string out;
};

// Runs `slimkv ARGS` with a SIGKILL watchdog of `limit_s` seconds; stdout and stderr together.
Exit run_slimkv(const std::string& args, int limit_s) {
  const std::string cmd =
      "timeout -s KILL " + std::to_string(limit_s) + " " + std::string(SLIMKV_BINARY) + " " + args + " 2>&1";
  Exit e;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return e;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) e.out.append(buf, n);
  const int st = ::pclose(p);
  e.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return e;
}

// Defect 1: the listener thread had not started when the failed load called stop(), which then did nothing; the
// join hung for ever (10-83% of starts). Ten starts per case, each must end at once with exit 1 and the error.
TEST(ServerStartup, AFailedLoadExitsWithItsErrorEveryTime) {
  const std::string dir = ::testing::TempDir() + "/slimkv-empty-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string bad = dir + "/corrupt.gguf";
  {
    std::ofstream f(bad, std::ios::binary);
    f << "GGUF\x03\x00\x00\x00garbage";
  }
  for (const std::string& m : {std::string("/nonexistent/model.gguf"), dir, bad}) {
    for (int i = 0; i < 10; ++i) {
      Exit e = run_slimkv("serve -m " + m + " --port 0", 20);
      ASSERT_EQ(e.code, 1) << m << " (137 = hung until killed): " << e.out;
      EXPECT_NE(e.out.find("error"), std::string::npos) << e.out;
    }
  }
  std::filesystem::remove_all(dir);
}

// Defect 6: a bad --chat-template threw with the listener thread joinable: "terminate called without an active
// exception", exit 134.
TEST(ServerStartup, ABadChatTemplateIsAnError) {
  SKIP_IF_MISSING(default_model());
  Exit e = run_slimkv("serve -m " + default_model() + " --port 0 --chat-template /nonexistent/template.jinja", 30);
  EXPECT_EQ(e.code, 1) << e.out;
  EXPECT_EQ(e.out.find("terminate called"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("template"), std::string::npos) << e.out;
}

// A Jinja template that does not parse fails the start with the parse error (templates are parsed once, at start-up),
// as an unknown --chat-template name does.
TEST(ServerStartup, AChatTemplateThatDoesNotParseFailsTheStart) {
  SKIP_IF_MISSING(default_model());
  const std::string file = ::testing::TempDir() + "/slimkv-broken-" + std::to_string(::getpid()) + ".jinja";
  std::ofstream(file) << "{% for m in messages %}{{ m.content }}";
  Exit e = run_slimkv("serve -m " + default_model() + " --port 0 --chat-template " + file, 30);
  EXPECT_EQ(e.code, 1) << e.out;
  EXPECT_NE(e.out.find("does not parse"), std::string::npos) << e.out;
  e = run_slimkv("serve -m " + default_model() + " --port 0 --chat-template no-such-name", 30);
  EXPECT_EQ(e.code, 1) << e.out;
  EXPECT_NE(e.out.find("neither a known name"), std::string::npos) << e.out;
  std::filesystem::remove(file);
}

// Defect 2: the HTTP library's SO_REUSEPORT let a second server bind the same port and take half the traffic.
TEST(ServerStartup, ASecondServerOnTheSamePortIsRefused) {
  SKIP_IF_MISSING(default_model());
  ServerProcess s;
  Exit e = run_slimkv("serve -m " + default_model() + " --port " + std::to_string(s.port()), 30);
  EXPECT_EQ(e.code, 1) << e.out;
  EXPECT_NE(e.out.find("in use"), std::string::npos) << e.out;
  int status = 0;
  s.get("/health", &status);
  EXPECT_EQ(status, 200) << "the first server still answers";
}

// Defect 8: more choices than --max-queue can never be admitted, so "retry" is wrong: 400 naming the limit. A full
// queue of requests that could fit later is still 429 + Retry-After.
TEST(ServerAdmission, NeverAdmissibleIs400AndAFullQueueIs429) {
  SKIP_IF_MISSING(default_model());
  ServerProcess s({"--max-num-seqs", "1", "--max-queue", "16"});
  auto r = s.post("/v1/completions", json{{"prompt", json::array({"a", "b"})}, {"n", 9}, {"max_tokens", 1}});
  EXPECT_EQ(r.first, 400) << r.second.dump();
  EXPECT_NE(r.second.dump().find("--max-queue"), std::string::npos) << r.second.dump();
  // 16 choices, one running at a time: the other 15 wait for most of its life; 16 more do not fit then.
  std::thread a([&] {
    auto ra = s.post("/v1/completions", json{{"prompt", "Once"}, {"n", 16}, {"max_tokens", 400}, {"ignore_eos", true}});
    EXPECT_EQ(ra.first, 200) << ra.second.dump();
  });
  bool waiting = false;
  for (int i = 0; i < 2000 && !waiting; ++i) {
    waiting = s.get("/metrics").find("num_requests_waiting{model_name=\"stories260K\"} 0\n") == std::string::npos;
    if (!waiting) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE(waiting);
  auto c = s.client();
  auto busy = c.Post("/v1/completions", json{{"prompt", "hi"}, {"n", 16}, {"max_tokens", 1}}.dump(), "application/json");
  a.join();
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->status, 429) << busy->body;
  EXPECT_EQ(busy->get_header_value("Retry-After"), "1");
}

// Issue R defect 10: an 8 MB prompt was tokenized (3.9 s) before the context check; a text that cannot fit is now
// refused from its byte count. And the JSON parser stopped at a NUL, ignoring what followed: now a 400.
TEST(ServerAdmission, AHugePromptIsRefusedBeforeTokenizingAndANulIsAnError) {
  SKIP_IF_MISSING(default_model());
  ServerProcess s;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = s.post("/v1/completions", json{{"prompt", std::string(7 << 20, 'a')}, {"max_tokens", 1}});
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.first, 400) << r.second.dump().substr(0, 300);
  EXPECT_NE(r.second.dump().find("maximum context length"), std::string::npos) << r.second.dump().substr(0, 300);
  EXPECT_LT(ms, 1500) << "refused without tokenizing";
  // A prompt just inside the bound is still tokenized and judged by its token count.
  r = s.post("/v1/completions", json{{"prompt", std::string(4000, 'a')}, {"max_tokens", 1}});
  EXPECT_EQ(r.first, 400);
  EXPECT_NE(r.second.dump().find("in the prompt"), std::string::npos) << r.second.dump().substr(0, 300);
  std::string nul = "{\"prompt\": \"hi\", \"max_tokens\": 1}";
  nul += std::string(1, '\0') + "{\"more\": 1}";
  r = s.post("/v1/completions", nul);
  EXPECT_EQ(r.first, 400) << r.second.dump();
  EXPECT_NE(r.second.dump().find("NUL"), std::string::npos) << r.second.dump();
}

}  // namespace
}  // namespace slimkv::test
