// The live dashboard's page (GET /dashboard): src/ops/dashboard.html, embedded at build time, with the seed's health
// thresholds filled in. The page itself polls /metrics and computes what it shows in the browser.
// Must not know: HTTP or how the metrics are produced.
#pragma once
#include <string>

#include "ops/diagnosis.h"

namespace slimkv {

std::string dashboard_page(const HealthThresholds& thresholds);

}  // namespace slimkv
