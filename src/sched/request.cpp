#include "sched/request.h"

namespace slimkv {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Abort: return "abort";
    default: return "none";
  }
}

Request::Request(RequestId id_, std::vector<int32_t> prompt, const RequestParams& p, double now_ms)
    : id(id_), tokens(std::move(prompt)), num_prompt_tokens(static_cast<int32_t>(tokens.size())), params(p),
      sampler(p.sampling) {
  times.arrival_ms = now_ms;
  kv.hash_seed = p.lora_id;
  if (p.constraint) constraint = p.constraint();
}

}  // namespace slimkv
