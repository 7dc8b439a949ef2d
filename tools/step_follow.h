// Tensor parallelism for the commands that schedule (serve, bench offline, generate, profile): rank 0 schedules and
// samples (speculative drafts and the adaptive switch included: decided once, not per rank), and
// before each forward broadcasts the step's plain-data batch; every other rank follows — it runs only the
// forward of each batch it receives on its slice, until rank 0 sends an empty one. Must not know: HTTP or
// workloads.
#pragma once
#include <cstdint>

#include "engine/engine.h"
#include "model/model.h"

namespace slimkv {

// Rank 0: every step's batch goes to the other ranks before its forward (nothing on one process).
void lead_followers(Engine& engine, const Model& model);
// Rank 0, when no step will follow: the other ranks stop following.
void release_followers(const Model& model);
// Ranks other than 0: runs each batch rank 0 sends until the empty one; the number of steps run. The wait between
// batches is polled without spinning (an idle server may send nothing for minutes).
int64_t follow_leader(Engine& engine, const Model& model);

// For one-shot commands: a rank other than 0 follows until rank 0 is done and gets true (the command then ends);
// rank 0 (or one process) leads and gets false — with a Release in scope that stops the others however it leaves.
bool follow_unless_leader(Engine& engine, const Model& model);
class FollowersRelease {
 public:
  explicit FollowersRelease(const Model& m) : m_(m) {}
  ~FollowersRelease() { release_followers(m_); }
  FollowersRelease(const FollowersRelease&) = delete;
  FollowersRelease& operator=(const FollowersRelease&) = delete;

 private:
  const Model& m_;
};

}  // namespace slimkv
