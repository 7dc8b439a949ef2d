// Starts the real `slimkv serve` binary on a free loopback port (--port 0, the port read from its log) and stops it
// with SIGTERM. Tests talk to it over HTTP with cpp-httplib's client, as any client would.
#pragma once
#include <algorithm>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "test_paths.h"

extern char** environ;

namespace slimkv::test {

inline std::string default_model() { return models_dir() + "/stories260K/stories260K.bin"; }

// A TCP connection to 127.0.0.1:port for tests that write raw HTTP; -1 if refused.
inline int connect_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends on fd until it closes or stays quiet for quiet_ms; *first_byte_ms (if given): how long
// after the call the first byte came.
inline std::string read_until_quiet(int fd, int quiet_ms, double* first_byte_ms = nullptr) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string out;
  char buf[8192];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, quiet_ms) <= 0) break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    if (out.empty() && first_byte_ms) {
      *first_byte_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Sends all of `request` on a new connection and returns the reply (until close or quiet_ms of quiet); "" when the
// connection is refused. A send the server cuts short (it answered and closed) ends the sending, not the reading.
inline std::string raw_exchange(int port, const std::string& request, int quiet_ms = 1500,
                                double* first_byte_ms = nullptr) {
  const int fd = connect_loopback(port);
  if (fd < 0) return "";
  for (size_t at = 0; at < request.size();) {
    const ssize_t n = ::send(fd, request.data() + at, request.size() - at, MSG_NOSIGNAL);
    if (n <= 0) break;
    at += static_cast<size_t>(n);
  }
  std::string out = read_until_quiet(fd, quiet_ms, first_byte_ms);
  ::close(fd);
  return out;
}

// A process's resident set (VmRSS), KiB; -1 if it cannot be read.
inline int64_t process_rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  int64_t v = 0;
  while (in >> key) {
    if (key == "VmRSS:") return in >> v, v;
  }
  return -1;
}

class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> extra_args = {}, const std::string& model = default_model()) {
    static int counter = 0;
    log_path_ = std::filesystem::temp_directory_path() /
                ("slimkv-serve-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".log");
    std::vector<std::string> args = {SLIMKV_BINARY, "serve", "-m", model, "--port", "0", "--threads", "1"};
    if (std::find(extra_args.begin(), extra_args.end(), "--kv-cache-memory") == extra_args.end()) {
      args.insert(args.end(), {"--kv-cache-memory", "0.02"});  // unless the test sizes the pool itself
    }
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) throw std::runtime_error("spawn failed");
    posix_spawn_file_actions_destroy(&fa);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::regex re("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    while (port_ == 0 || !healthy()) {
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("server did not start: " + log());
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("server exited: " + log());
      }
      std::smatch m;
      std::string text = log();
      if (port_ == 0 && std::regex_search(text, m, re)) port_ = std::stoi(m[1]);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      for (int i = 0; i < 200 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
      }
      if (::waitpid(pid_, &status, WNOHANG) == 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
      }
    }
    std::filesystem::remove(log_path_);
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // Waits up to timeout_ms for the server to exit; its exit status, 128 + signal if killed, or -1 if still running.
  int wait_exit(int timeout_ms) {
    int status = 0;
    for (int waited = 0; waited <= timeout_ms; waited += 10) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const {
    std::ifstream in(log_path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    return c;
  }
  // POST JSON; returns (status, parsed body or the raw text as a JSON string).
  std::pair<int, nlohmann::json> post(const std::string& path, const std::string& body,
                                      const httplib::Headers& headers = {}) const {
    auto c = client();
    auto r = c.Post(path, headers, body, "application/json");
    if (!r) return {0, nlohmann::json(httplib::to_string(r.error()))};
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    return {r->status, j.is_discarded() ? nlohmann::json(r->body) : j};
  }
  std::pair<int, nlohmann::json> post(const std::string& path, const nlohmann::json& body) const {
    return post(path, body.dump());
  }
  std::string get(const std::string& path, int* status = nullptr) const {
    auto c = client();
    auto r = c.Get(path);
    if (status) *status = r ? r->status : 0;
    return r ? r->body : "";
  }

 private:
  bool healthy() const {
    if (port_ == 0) return false;
    httplib::Client c("127.0.0.1", port_);
    auto r = c.Get("/health");
    return r && r->status == 200;
  }

  pid_t pid_ = -1;
  int port_ = 0;
  std::filesystem::path log_path_;
};

// Runs `slimkv ARGS` (stderr dropped) and returns its stdout; *rc = its exit status.
inline std::string run_tool(const std::string& args, int* rc) {
  FILE* p = ::popen((std::string(SLIMKV_BINARY) + " " + args + " 2>/dev/null").c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  const int status = ::pclose(p);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// A test suite sharing one server, started once per suite with Tag::server_args(); tests skip without the model.
template <class Tag>
class SharedServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (exists(default_model())) server_ = new ServerProcess(Tag::server_args());
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!server_) {
      if (in_ci()) FAIL() << "missing " << default_model() << " (CI is set: inputs must be present)";
      GTEST_SKIP() << "missing " << default_model();
    }
  }
  static inline ServerProcess* server_ = nullptr;
};

// The data lines of an SSE body, parsed ("[DONE]" kept as a string).
inline std::vector<nlohmann::json> sse_events(const std::string& body) {
  std::vector<nlohmann::json> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("data: ", 0) != 0) continue;
    std::string data = line.substr(6);
    out.push_back(data == "[DONE]" ? nlohmann::json("[DONE]") : nlohmann::json::parse(data));
  }
  return out;
}

// A streamed completion's text (its chunks' choices[0].text joined) and whether it ended with [DONE].
struct StreamedText {
  std::string text;
  bool done = false;
};
inline StreamedText streamed_text(const std::string& body) {
  StreamedText s;
  for (const nlohmann::json& e : sse_events(body)) {
    if (e == "[DONE]") s.done = true;
    else s.text += e["choices"][0]["text"].get<std::string>();
  }
  return s;
}

// Posts a completion body plainly and then with "stream": true; the streamed text must equal the plain response's
// and end with [DONE]. Returns the plain response.
inline nlohmann::json expect_streaming_equals_plain(ServerProcess& server, const nlohmann::json& body) {
  auto [status, plain] = server.post("/v1/completions", body);
  EXPECT_EQ(status, 200) << plain.dump();
  nlohmann::json sbody = body;
  sbody["stream"] = true;
  auto [sstatus, raw] = server.post("/v1/completions", sbody);
  EXPECT_EQ(sstatus, 200);
  const StreamedText st = streamed_text(raw.is_string() ? raw.get<std::string>() : raw.dump());
  EXPECT_TRUE(st.done);
  EXPECT_EQ(st.text, plain["choices"][0]["text"].get<std::string>());
  return plain;
}

}  // namespace slimkv::test
