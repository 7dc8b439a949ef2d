#include "ops/dashboard_page.h"

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace slimkv {
namespace {

// The page, as CMake embedded it (a raw string literal of src/ops/dashboard.html).
constexpr const char* kPage =
#include "dashboard_html.inc"
    ;

}  // namespace

std::string dashboard_page(const HealthThresholds& t) {
  const nlohmann::json j = {{"ttft_ms", t.ttft_ms}, {"tpot_ms", t.tpot_ms}, {"memory_use", t.memory_use},
                            {"cache_hit_rate", t.cache_hit_rate}, {"queue_ms", t.queue_ms}};
  std::string page = kPage;
  const std::string slot = "THRESHOLDS_JSON";
  const size_t at = page.find(slot);
  SLIMKV_CHECK(at != std::string::npos, "dashboard.html lost its THRESHOLDS_JSON slot");
  page.replace(at, slot.size(), j.dump());
  return page;
}

}  // namespace slimkv
