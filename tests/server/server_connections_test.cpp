// Issue R defect 3: a few hundred idle or slow clients must not take the server down. Before, a fixed pool of
// (max-num-seqs + 16) handler threads was held by idle sockets until their keep-alive timeout and by slowloris
// clients for as long as they trickled bytes, and /health waited behind them for 30 s. Now every connection has its
// own thread (up to --http-threads), so /health and a completion answer at once beside them.
#include <chrono>
#include <thread>

#include "server_process.h"

namespace slimkv::test {
namespace {

using clock_type = std::chrono::steady_clock;

TEST(ServerConnections, IdleAndSlowClientsDoNotBlockHealthOrCompletions) {
  ServerProcess server({"--max-num-seqs", "4"});  // the old pool: 20 handler threads
  std::vector<int> idle, slow;
  for (int i = 0; i < 150; ++i) {  // connect and say nothing
    const int fd = connect_loopback(server.port());
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  const std::string head = "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  for (int i = 0; i < 40; ++i) {  // slowloris: a header that never ends
    const int fd = connect_loopback(server.port());
    ASSERT_GE(fd, 0);
    ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    while (!stop) {
      for (int fd : slow) ::send(fd, "a", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the server accept them all
  auto c = server.client();
  c.set_read_timeout(20, 0);
  for (int k = 0; k < 3; ++k) {
    const auto t0 = clock_type::now();
    auto r = c.Get("/health");
    const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
    ASSERT_TRUE(r) << "no answer from /health beside 190 idle and slow connections";
    EXPECT_EQ(r->status, 200);
    EXPECT_LT(s, 2.0) << "/health took " << s << " s";
  }
  const auto t0 = clock_type::now();
  auto r = c.Post("/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 4})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_LT(std::chrono::duration<double>(clock_type::now() - t0).count(), 5.0);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  // SIGTERM with every idle and slow client still connected: the drain does not wait for them, and the stop after
  // it ends their connections (before, their threads read on to their timeouts and a watchdog ended the process
  // 5 s after the drain).
  const auto t_term = clock_type::now();
  ::kill(server.pid(), SIGTERM);
  const int code = server.wait_exit(15000);
  EXPECT_EQ(code, 0) << "exit code (or -1: still running after 15 s)";
  EXPECT_LT(std::chrono::duration<double>(clock_type::now() - t_term).count(), 3.0);
  EXPECT_EQ(server.log().find("connections still open"), std::string::npos) << server.log();
  stop = true;
  trickle.join();
  for (int fd : idle) ::close(fd);
  for (int fd : slow) ::close(fd);
}

}  // namespace
}  // namespace slimkv::test
