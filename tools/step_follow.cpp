#include "tools/step_follow.h"

#include <vector>

#include "model/forward_batch_codec.h"

namespace slimkv {

void lead_followers(Engine& engine, const Model& model) {
  if (!model.collectives) return;
  engine.set_before_forward([c = model.collectives, bytes = std::vector<uint8_t>()](const ForwardBatch& b) mutable {
    encode_forward_batch(b, bytes);  // into a buffer reused across steps
    c->broadcast(bytes, false);
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
    engine.forward_only(decode_forward_batch(msg));
    ++steps;
  }
}

}  // namespace slimkv
