#include "engine/step_adapters.h"

#include <algorithm>

namespace slimkv {

std::vector<const LoraAdapter*> plan_adapter_rows(const SchedOutput& out, Scheduler& sched, ForwardBatch& batch) {
  std::vector<const LoraAdapter*> adapters;
  batch.token_lora.clear();
  bool any = false;
  for (const auto& c : out.chunks) any = any || sched.find(c.id)->params.lora;
  if (!any) return adapters;
  for (const auto& c : out.chunks) {
    const LoraAdapter* a = sched.find(c.id)->params.lora.get();
    int32_t index = -1;
    if (a) {
      auto it = std::find(adapters.begin(), adapters.end(), a);
      index = static_cast<int32_t>(it - adapters.begin());
      if (it == adapters.end()) adapters.push_back(a);
    }
    batch.token_lora.insert(batch.token_lora.end(), c.token_ids.size(), index);
  }
  return adapters;
}

}  // namespace slimkv
