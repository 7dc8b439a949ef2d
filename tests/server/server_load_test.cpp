// Load: 64 concurrent streaming clients, 10% of them hanging up mid-stream. Every other request completes with the
// right token count; the hung-up ones are aborted; afterwards nothing runs and no KV block is held.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>

#include "server/server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

// Sends a streaming request over a raw socket, reads until `chunks` SSE events have arrived, then hangs up.
bool stream_then_hang_up(int port, const std::string& body, int chunks) {
  const int fd = connect_loopback(port);
  if (fd < 0) return false;
  const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return false;
  }
  std::string got;
  char buf[4096];
  size_t seen = 0;
  int events = 0;
  while (events < chunks) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
    for (size_t at; (at = got.find("data: ", seen)) != std::string::npos; seen = at + 6) ++events;
  }
  ::close(fd);
  return events >= chunks;
}

TEST(ServerLoad, SixtyFourStreamsWithDisconnectsLoseNothingAndLeakNoBlocks) {
  SKIP_IF_MISSING(default_model());
  ServerProcess s({"--max-num-seqs", "64", "--metrics-vllm-names"});
  constexpr int kClients = 64, kTokens = 48;
  std::atomic<int> completed{0}, hung_up{0}, wrong{0};
  std::vector<std::string> failures(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      const bool leaves = i % 10 == 3;  // 7 of 64 (~10%) hang up mid-stream
      json body = {{"prompt", "Once upon a time there was a little dog named " + std::to_string(i)},
                   {"max_tokens", leaves ? 480 : kTokens}, {"ignore_eos", true}, {"temperature", 0.8},
                   {"seed", i}, {"stream", true}, {"stream_options", {{"include_usage", true}}}};
      if (leaves) {
        if (stream_then_hang_up(s.port(), body.dump(), 4)) ++hung_up;
        return;
      }
      auto [status, raw] = s.post("/v1/completions", body);
      if (status != 200) {
        failures[i] = "status " + std::to_string(status) + " " + raw.dump();
        ++wrong;
        return;
      }
      int tokens = 0, usage = -1;
      bool done = false;
      for (const auto& e : sse_events(raw.get<std::string>())) {
        if (e == "[DONE]") done = true;
        else if (e["choices"].empty()) usage = e["usage"]["completion_tokens"];
        else if (e["choices"][0]["finish_reason"].is_null()) ++tokens;
      }
      if (tokens != kTokens || usage != kTokens || !done) {
        failures[i] = "tokens " + std::to_string(tokens) + " usage " + std::to_string(usage);
        ++wrong;
        return;
      }
      ++completed;
    });
  }
  for (auto& t : clients) t.join();
  for (int i = 0; i < kClients; ++i) EXPECT_TRUE(failures[i].empty()) << "client " << i << ": " << failures[i];
  EXPECT_EQ(completed, 57);
  EXPECT_EQ(hung_up, 7);
  // The hung-up requests are aborted (detected at their next write), then nothing runs and no block is held.
  std::string m;
  for (int i = 0; i < 250; ++i) {
    m = s.get("/metrics");
    if (m.find("slimkv:num_requests_running{model_name=\"stories260K\"} 0\n") != std::string::npos &&
        m.find("slimkv:kv_cache_usage_perc{model_name=\"stories260K\"} 0\n") != std::string::npos &&
        m.find("slimkv:request_success_total{model_name=\"stories260K\",finished_reason=\"abort\"} 7\n") !=
            std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(m.find("slimkv:num_requests_running{model_name=\"stories260K\"} 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("slimkv:num_requests_waiting{model_name=\"stories260K\"} 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("slimkv:kv_cache_usage_perc{model_name=\"stories260K\"} 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("finished_reason=\"abort\"} 7\n"), std::string::npos) << m;
  EXPECT_NE(m.find("finished_reason=\"length\"} 57\n"), std::string::npos) << m;
}

}  // namespace
}  // namespace slimkv::test
