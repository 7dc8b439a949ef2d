// Engine's disk-tier glue (engine/kv_offload.h, issue T): opening the tier with its fingerprint, the restores before
// admission and the read-ahead for the requests behind them, the shutdown save, and — under tensor parallelism — the
// tier ops rank 0 hands the other ranks (sync_tier) and they apply.
#include <cstdio>
#include <filesystem>

#include "core/check.h"
#include "engine/engine.h"

namespace slimkv {

void Engine::open_tier() {
  if (cfg_.cache.kv_offload_dir.empty()) return;
  const TensorShard& shard = model_.shard;
  DiskTierConfig t;
  t.dir = cfg_.cache.kv_offload_dir;  // one directory per rank: each keeps its own heads' records
  if (shard.ranks > 1) t.dir += fmt::format("/rank-{}-of-{}", shard.rank, shard.ranks);
  t.max_bytes = cfg_.cache.kv_offload_bytes;
  // another model, KV dtype, block size, compression config or rank: another tier (its files are ignored)
  // the model file's size and time too: a file replaced at the same path is another model
  std::error_code ec;
  const auto bytes = std::filesystem::is_regular_file(model_.path, ec) ? std::filesystem::file_size(model_.path, ec) : 0;
  const auto mtime = std::filesystem::last_write_time(model_.path, ec).time_since_epoch().count();
  t.fingerprint = (kv_manager_.salt() ^ (static_cast<uint64_t>(cfg_.cache.block_size) << 40) ^
                   static_cast<uint64_t>(shard.rank) * 1099511628211ull ^ (bytes * 0x9e3779b97f4a7c15ull) ^
                   static_cast<uint64_t>(mtime) * 0xc2b2ae3d27d4eb4full) | 1;
  offload_ = std::make_unique<KvOffload>(layout_, storage_, kv_manager_, std::move(t));
}

// The disk tier's blocks for the requests admission may take this step (not the whole queue), and a read-ahead for
// the next few behind them.
void Engine::restore_for_admission() {
  if (!offload_) return;
  int32_t seats = cfg_.sched.max_num_seqs - scheduler_.num_running(), ahead = 4;
  for (const Request* r : scheduler_.waiting()) {
    if (seats-- > 0) {
      offload_->restore(*r);
    } else if (ahead-- > 0) {
      offload_->prefetch(*r);
    } else {
      break;
    }
  }
  sync_tier();  // every rank reads back the same blocks (or says it could not) before admission hits them
}

void Engine::save_tier() {
  if (!offload_ || tier_saved_) return;
  tier_saved_ = true;
  offload_->save_cached(cfg_.cache.kv_offload_bytes);
  sync_tier();
}

void Engine::set_tier_sync(TierSync fn) {
  tier_sync_ = std::move(fn);
  if (offload_) offload_->record_ops(static_cast<bool>(tier_sync_));
}

void Engine::sync_tier() {
  if (!offload_ || !tier_sync_) return;
  const KvTierOps ops = offload_->take_ops();
  if (ops.empty()) return;
  const std::vector<double> failed = tier_sync_(ops);
  offload_->settle(ops, failed);
}

std::vector<double> Engine::apply_tier_ops(const KvTierOps& ops) {
  SLIMKV_CHECK(offload_ != nullptr, "tier ops for an engine without --kv-offload-dir");
  return offload_->apply(ops);
}

}  // namespace slimkv
