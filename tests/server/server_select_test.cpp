// Issue K on the real server: select mode (a sketch index, calibrated by `slimkv calibrate` at test time) under
// concurrent streamed and plain completions — every request answered, the reads visible in /metrics (rows read below
// the rows visible, index entries scored), and every KV block free afterwards.
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <regex>

#include <unistd.h>

#include "server/server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

double metric(const std::string& text, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("slimkv:" + name + "\\{[^}]*\\} ([0-9.e+]+)"))) return -1;
  return std::stod(m[1]);
}

TEST(ServerSelect, ConcurrentRequestsWithSelectModeAreAnsweredAndFreeTheirBlocks) {
  SKIP_IF_MISSING(default_model());
  const std::string dir = ::testing::TempDir() + "/select_server_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  int rc = -1;
  run_tool("calibrate -m " + default_model() + " --data " + data_dir() + "/tinystories_valid_head.txt --max-tokens 2048 "
           "-o " + dir + "/k260.calib",
           &rc);
  ASSERT_EQ(rc, 0) << "calibrate failed";
  {
    std::ofstream cfg(dir + "/select.json");
    cfg << json{{"kv_cache_dtype", "int8"}, {"kv_sparse_mode", "select"}, {"kv_select_index", "sketch"},
                {"kv_select_rank", 4}, {"kv_select_fraction", 0.25}, {"kv_sink_tokens", 4}, {"kv_recent_window", 16},
                {"kv_calibration", dir + "/k260.calib"}}
               .dump();
  }
  ServerProcess server({"--kv-config", dir + "/select.json"});
  std::vector<std::future<int>> f;
  for (int i = 0; i < 12; ++i) {
    f.push_back(std::async(std::launch::async, [&, i] {
      json body = {{"prompt", "Once upon a time there was a little girl who " + std::string(i % 3 * 40, 'a')},
                   {"max_tokens", 120}, {"ignore_eos", true}, {"temperature", 0}};
      if (i % 2) body["stream"] = true;
      return server.post("/v1/completions", body).first;
    }));
  }
  for (auto& x : f) EXPECT_EQ(x.get(), 200);
  std::string m;
  for (int i = 0; i < 100; ++i) {  // the last requests' blocks are freed just after their answers
    m = server.get("/metrics");
    if (m.find("slimkv:kv_cache_usage_perc{model_name=\"stories260K\"} 0\n") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(m.find("slimkv:kv_cache_usage_perc{model_name=\"stories260K\"} 0\n"), std::string::npos) << m;
  const double read = metric(m, "attention_rows_read_total"), visible = metric(m, "attention_rows_visible_total");
  EXPECT_GT(metric(m, "select_index_rows_scored_total"), 0) << m;
  EXPECT_GT(read, 0);
  EXPECT_LT(read, 0.6 * visible) << "a quarter of each long context (more for short ones: sinks + window)";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace slimkv::test
