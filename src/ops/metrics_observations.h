// Turns a server's /metrics (slimkv: or vllm: names) into diagnosis Observations: histogram means over a window
// (the difference of two scrapes), KV usage, prefix hit rate, preemptions, the compression ratio.
// Must not know: HTTP or the diagnosis rules.
#pragma once
#include "ops/diagnosis.h"
#include "ops/prometheus_scrape.h"

namespace slimkv {

// before: the scrape at the start of the window (nullptr: since the server started).
Observations observations_from_metrics(const PromSamples& now, const PromSamples* before);

}  // namespace slimkv
