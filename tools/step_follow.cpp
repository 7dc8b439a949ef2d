#include "tools/step_follow.h"

#include <vector>

#include "core/check.h"
#include "engine/kv_tier_ops.h"
#include "model/forward_batch_codec.h"

namespace slimkv {

namespace {
// The last byte of a message says what it is: a step's batch, or what rank 0's disk tier did to its pools.
constexpr uint8_t kBatch = 'F', kTierOps = 'T';
}  // namespace

void lead_followers(Engine& engine, const Model& model) {
  if (!model.collectives) return;
  engine.set_before_forward([c = model.collectives, bytes = std::vector<uint8_t>()](const ForwardBatch& b) mutable {
    encode_forward_batch(b, bytes);  // into a buffer reused across steps
    bytes.push_back(kBatch);
    c->broadcast(bytes, false);
  });
  engine.set_tier_sync([c = model.collectives](const KvTierOps& ops) {
    std::vector<uint8_t> bytes;
    encode_kv_tier_ops(ops, bytes);
    bytes.push_back(kTierOps);
    c->broadcast(bytes, false);
    std::vector<double> failed(static_cast<size_t>(ops.num_restores()), 0.0);  // rank 0 read every one of them
    if (!failed.empty()) c->all_reduce_sum(failed.data(), static_cast<int64_t>(failed.size()));
    return failed;
  });
}

void release_followers(const Model& model) {
  if (!model.collectives) return;
  std::vector<uint8_t> stop;
  model.collectives->broadcast(stop, false);
}

int64_t follow_leader(Engine& engine, const Model& model) {
  std::vector<uint8_t> msg;
  int64_t steps = 0;
  while (true) {
    model.collectives->broadcast(msg, true);
    if (msg.empty()) return steps;
    const std::span<const uint8_t> body(msg.data(), msg.size() - 1);
    if (msg.back() == kTierOps) {
      const KvTierOps ops = decode_kv_tier_ops(body);
      std::vector<double> failed = engine.apply_tier_ops(ops);
      if (!failed.empty()) model.collectives->all_reduce_sum(failed.data(), static_cast<int64_t>(failed.size()));
      continue;
    }
    SLIMKV_CHECK(msg.back() == kBatch, "rank 0 sent a message of unknown kind {}", static_cast<int>(msg.back()));
    engine.forward_only(decode_forward_batch(body));
    ++steps;
  }
}

void require_kv_budget(int32_t tensor_parallel_size, const EngineConfig& cfg, const char* command) {
  SLIMKV_CHECK(tensor_parallel_size <= 1 || cfg.cache.kv_cache_memory_gib > 0,
               "{} --tensor-parallel-size: give --kv-cache-memory (every rank must size its pool alike: rank 0's "
               "block ids address every rank's cache)", command);
}

bool follow_unless_leader(Engine& engine, const Model& model) {
  if (model.collectives && model.shard.rank != 0) {
    follow_leader(engine, model);
    return true;
  }
  lead_followers(engine, model);
  return false;
}

void finish_leading(Engine& engine, const Model& model) {
  engine.save_tier();
  release_followers(model);
}

}  // namespace slimkv
