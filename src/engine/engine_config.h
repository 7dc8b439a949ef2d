// The engine's one validated configuration: KV cache, scheduler and threads (flags map 1:1 to fields).
// Must not know: the HTTP layer.
#pragma once
#include <string>

#include "compress/compression_config.h"
#include "kv/kv_cache_config.h"
#include "sched/scheduler_config.h"

namespace slimkv {

struct EngineConfig {
  KvCacheConfig cache;
  SchedulerConfig sched;
  CompressionConfig compress;
  std::string kv_config_file;  // --kv-config: JSON CompressionConfig; replaces the individual compression flags
  int32_t threads = 0;  // 0 = number of cores
  std::string speculative_config;  // --speculative-config: JSON (sched/speculative_config.h); "" = off
  std::string mla_attention = "auto";  // --mla-attention absorbed|decompressed|auto (MLA models; auto: per step, the
                                       // cheaper by a multiply-add count)
};

}  // namespace slimkv
