#include "model/mtp_head.h"

#include <string>

namespace slimkv {

std::unique_ptr<Model> mtp_head_model(const Model& trunk, int32_t i) {
  SLIMKV_CHECK(i >= 0 && i < trunk.config.num_mtp_layers && i < static_cast<int32_t>(trunk.mtp.size()),
               "{} has {} MTP heads (nextn_predict_layers): no head {}", trunk.path, trunk.config.num_mtp_layers, i);
  SLIMKV_CHECK(trunk.shard.ranks == 1, "MTP heads run in one process (not under --tensor-parallel-size {})",
               trunk.shard.ranks);
  const MtpHeadWeights& h = trunk.mtp[i];
  auto m = std::make_unique<Model>();
  m->config = trunk.config;
  m->config.num_layers = 1;
  m->config.num_mtp_layers = 0;
  m->config.layers = {trunk.config.layers.back()};
  m->tok_embd = h.embed.data ? h.embed : trunk.tok_embd;
  m->layers = {h.layer};
  m->final_norm = h.head_norm;
  m->output = h.head.data ? h.head : trunk.output;
  m->output_tied = !h.head.data && trunk.output_tied;
  m->mtp_input = &h;
  m->path = trunk.path + " (MTP head " + std::to_string(i) + ")";
  return m;
}

}  // namespace slimkv
