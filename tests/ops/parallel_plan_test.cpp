// plan --tensor-parallel-size / --expert-parallel-size: the per-rank arithmetic of ops/parallel_plan.h on a shape
// small enough to check by hand, and the planner-shape approximation on the Llama-3-70B shape.
#include <gtest/gtest.h>

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
  s.expert_bytes = 6400;     // over T x E
  s.replicated_bytes = 100;  // whole
  s.num_moe_layers = 2;
  s.experts_used = 4;
  s.kv_split_bytes_per_token = 64;  // 4 KV heads of 16 bytes: not below one head
  s.min_kv_heads = 4;
  const ParallelPlanRow one = plan_parallel(s, 1, 1, 10, 2);
  EXPECT_EQ(one.weights_bytes_per_rank, 800 + 400 + 6400 + 100);
  EXPECT_EQ(one.kv_bytes_per_rank, 64 * 10 * 2);
  EXPECT_EQ(one.all_reduce_bytes_per_token, 0);
  const ParallelPlanRow r = plan_parallel(s, 2, 4, 10, 2);
  EXPECT_EQ(r.ranks, 8);
  EXPECT_EQ(r.weights_bytes_per_rank, (800 + 400) / 2 + 6400 / 8 + 100);
  EXPECT_EQ(r.all_reduce_bytes_per_token, 2 * 2 * 1024 * 4);            // two per layer, dim f32 each
  EXPECT_EQ(r.all_reduce_wire_bytes_per_token, 2 * 2 * 1024 * 4 * 2 * 1 / 2);  // ring: 2 (T - 1) / T
  EXPECT_EQ(r.all_to_all_bytes_per_token, 2 * 2 * 4 * 1024 * 2 * 3 / 4);    // dispatch + combine, bf16, (E - 1) / E
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
