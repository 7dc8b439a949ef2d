#include "core/profiler.h"

namespace slimkv {

const char* prof_kind_name(ProfKind k) {
  switch (k) {
    case ProfKind::Matmul: return "matmul (weights)";
    case ProfKind::Attention: return "attention (scores+softmax+values)";
    case ProfKind::KvWrite: return "RoPE + KV write (project/quantize)";
    case ProfKind::SparseScoring: return "sparse: importance scoring";
    case ProfKind::SparseSelection: return "sparse: top-K selection + evict/merge";
    case ProfKind::Indexer: return "indexer (DeepSeek-V4's lightning indexer; select mode's row choice)";
    case ProfKind::Compressor: return "KV compressor (DeepSeek-V4)";
    case ProfKind::Collective: return "collectives (all-reduce between ranks)";
    case ProfKind::Sampling: return "sampling";
    case ProfKind::Scheduling: return "scheduling";
    case ProfKind::SpecPropose: return "speculative: proposing drafts";
    case ProfKind::SpecVerify: return "speculative: verifying drafts";
    case ProfKind::Other: return "other (norms, SwiGLU, residuals)";
    case ProfKind::kCount: break;
  }
  return "?";
}

}  // namespace slimkv
