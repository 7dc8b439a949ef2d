// One case per construct the engine supports (tests/jinja/engine_cases.json: template, context and jinja2's render,
// written by make_engine_cases.py), each rendered by the engine and compared byte for byte.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "jinja/template.h"
#include "test_paths.h"

namespace slimkv::test {
namespace {

std::tm engine_cases_clock() {  // 2026-01-01 00:00:00, as jinja_diff.py freezes Python's clock
  std::tm tm{};
  tm.tm_year = 126;
  tm.tm_mday = 1;
  tm.tm_wday = 4;
  return tm;
}

nlohmann::ordered_json load_engine_cases() {
  std::ifstream in(repo_dir() + "/tests/jinja/engine_cases.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::ordered_json::parse(ss.str());
}

class EngineCase : public ::testing::TestWithParam<size_t> {};

TEST_P(EngineCase, RendersLikeJinja2) {
  static const nlohmann::ordered_json cases = load_engine_cases();
  ASSERT_LT(GetParam(), cases.size());
  const auto& c = cases[GetParam()];
  SCOPED_TRACE(c["name"].get<std::string>() + ": " + c["template"].get<std::string>());
  jinja::Options opt;
  opt.now = engine_cases_clock;
  auto t = jinja::Template::parse(c["template"].get<std::string>(), opt);
  EXPECT_EQ(t.render(c["context"]), c["rendered"].get<std::string>());
}

INSTANTIATE_TEST_SUITE_P(Constructs, EngineCase, ::testing::Range<size_t>(0, 45));

TEST(EngineCases, TableSizeMatchesTheInstantiation) { EXPECT_EQ(load_engine_cases().size(), 45u); }

}  // namespace
}  // namespace slimkv::test
