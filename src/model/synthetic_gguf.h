// Writes a dense synthetic shape (model/synthetic_model.h: llama-15m, llama-110m, llama-1b, ...) as a llama GGUF,
// or the qwen3moe-a3b-4l MoE shape as a qwen3moe GGUF, that both slimkv and llama.cpp load: seeded N(0, 0.02) weights, unit norms, a placeholder SentencePiece vocabulary
// (byte tokens + fillers) — the input of side-by-side speed runs (llama-quantize makes the quantized copies).
// Must not know: benchmarks.
#pragma once
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace slimkv {

// Writes `shape` with matrices stored as `dtype` (any writable weight type) to path; returns the bytes written.
int64_t write_synthetic_gguf(const std::string& shape, DType dtype, const std::string& path, uint64_t seed = 1);

}  // namespace slimkv
