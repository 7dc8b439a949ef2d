// The C++ half of the differential test against Python's jinja2 (tests/jinja/jinja_diff.py): renders every case of
// the JSONL file named by SLIMKV_JINJA_DIFF_IN ({"id", "template", "context"}) and writes {"id", "rendered"} or
// {"id", "error", "kind"} lines to SLIMKV_JINJA_DIFF_OUT; the script compares them with jinja2's renders. Without
// the variables (a plain test run) it is skipped.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "jinja/template.h"

namespace slimkv::test {
namespace {

std::tm diff_frozen_clock() {  // 2026-01-01 00:00:00, as the script freezes Python's clock
  std::tm tm{};
  tm.tm_year = 126;
  tm.tm_mday = 1;
  tm.tm_wday = 4;
  return tm;
}

// DISABLED_: not a test on its own (ctest runs it through jinja_diff.py with --gtest_also_run_disabled_tests).
TEST(JinjaDiff, DISABLED_RenderCasesFromEnv) {
  const char* in_path = std::getenv("SLIMKV_JINJA_DIFF_IN");
  const char* out_path = std::getenv("SLIMKV_JINJA_DIFF_OUT");
  if (!in_path || !out_path) GTEST_SKIP() << "run by tests/jinja/jinja_diff.py";
  std::ifstream in(in_path);
  std::ofstream out(out_path, std::ios::binary);
  ASSERT_TRUE(in.good() && out.good());
  jinja::Options opt;
  opt.now = diff_frozen_clock;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto c = nlohmann::ordered_json::parse(line);
    nlohmann::ordered_json r;
    r["id"] = c["id"];
    try {
      auto t = jinja::Template::parse(c["template"].get<std::string>(), opt);
      r["rendered"] = t.render(c["context"]);
    } catch (const jinja::TemplateError& e) {
      r["error"] = e.what();
      r["kind"] = jinja::error_kind_name(e.kind());
    }
    out << r.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    ++n;
  }
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace slimkv::test
