// The engine's one validated configuration: KV cache, scheduler and threads (flags map 1:1 to fields).
// Must not know: the HTTP layer.
#pragma once
#include "kv/kv_cache_config.h"
#include "sched/scheduler_config.h"

namespace slimkv {

struct EngineConfig {
  KvCacheConfig cache;
  SchedulerConfig sched;
  int32_t threads = 0;  // 0 = number of cores
};

}  // namespace slimkv
