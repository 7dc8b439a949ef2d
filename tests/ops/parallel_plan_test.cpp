// plan --tensor-parallel-size / --expert-parallel-size: the per-rank arithmetic of ops/parallel_plan.h on a shape
// small enough to check by hand, and the planner-shape approximation on the Llama-3-70B shape.
#include <gtest/gtest.h>

#include "core/check.h"
#include "ops/memory_plan.h"
#include "ops/parallel_plan.h"

namespace slimkv {
namespace {

TEST(ParallelPlan, PerRankBytesFollowTheSplitRules) {
  ParallelShape s;
  s.num_layers = 2;
  s.dim = 1024;
  s.head_split_bytes = 800;  // over T
  s.dense_ffn_bytes = 400;   // over T
  s.expert_bytes = 6400;     // over T (E groups of T / E ranks)
  s.replicated_bytes = 100;  // whole
  s.num_moe_layers = 2;
  s.num_experts = 8;
  s.experts_used = 4;
  s.kv_split_bytes_per_token = 64;  // 4 KV heads of 16 bytes: not below one head
  s.min_kv_heads = 4;
  const ParallelPlanRow one = plan_parallel(s, 1, 1, 10, 2);
  EXPECT_EQ(one.weights_bytes_per_rank, 800 + 400 + 6400 + 100);
  EXPECT_EQ(one.kv_bytes_per_rank, 64 * 10 * 2);
  EXPECT_EQ(one.all_reduce_bytes_per_token, 0);
  const ParallelPlanRow r = plan_parallel(s, 4, 2, 10, 2);
  EXPECT_EQ(r.ranks, 4);
  EXPECT_EQ(r.weights_bytes_per_rank, (800 + 400 + 6400) / 4 + 100);
  EXPECT_EQ(r.all_reduce_bytes_per_token, 2 * 2 * 1024 * 4);                  // two per layer, dim f32 each
  EXPECT_EQ(r.all_reduce_wire_bytes_per_token, 2 * 2 * 1024 * 4 * 2 * 3 / 4);  // ring: 2 (T - 1) / T
  // 4 of 8 experts miss a group of 4 with probability (4/8)(3/7)(2/6)(1/5) = 1/70.
  EXPECT_NEAR(r.expert_reach, 69.0 / 70, 1e-12);
  // 2 layers: their attention all-reduces (ring) + per MoE layer a row with probability reach, and the all-gather.
  const double row = 1024 * 4 * 3 / 4.0;
  EXPECT_EQ(r.all_to_all_wire_bytes_per_token, static_cast<int64_t>(2 * row * 2 + 2 * row * (69.0 / 70 + 1)));
  EXPECT_NEAR(plan_parallel(s, 8, 8, 10, 2).expert_reach, 0.5, 1e-12);  // one expert a rank: 4 of 8 miss it 1/2
  EXPECT_THROW(plan_parallel(s, 4, 3, 10, 2), Error);                   // E must divide T
  EXPECT_EQ(plan_parallel(s, 8, 1, 10, 2).kv_bytes_per_rank, 64 / 4 * 10 * 2);  // 8 ranks, 4 KV heads: one each
}

TEST(ParallelPlan, PlannerShapeSplitsAttentionAndKeepsEmbeddingsWhole) {
  ModelShape s{80, 64, 8, 128, 8192, 28672, 128256, 0, "f16", {}};  // the Llama-3-70B shape
  const int64_t weights = 2 * s.estimated_params(), kv_per_token = int64_t{80} * 8 * 128 * 2 * 2;
  const ParallelShape p = parallel_shape_of_plan(s, weights, kv_per_token);
  EXPECT_EQ(p.replicated_bytes, int64_t{2} * 2 * 128256 * 8192);
  EXPECT_EQ(p.head_split_bytes, int64_t{2} * 80 * 8192 * 2 * (64 + 8) * 128);
  EXPECT_EQ(p.head_split_bytes + p.replicated_bytes + p.expert_bytes, weights);
  EXPECT_EQ(plan_parallel(p, 8, 1, 8192, 8).kv_bytes_per_rank, kv_per_token / 8 * 8192 * 8);
  EXPECT_EQ(plan_parallel(p, 16, 1, 8192, 8).kv_bytes_per_rank, kv_per_token / 8 * 8192 * 8);  // 8 KV heads: floor
}

}  // namespace
}  // namespace slimkv
