// Writes a synthetic shape (model/synthetic_model.h) as a GGUF both slimkv and llama.cpp load: a dense shape
// (llama-15m ... llama3.1-8b) as llama, qwen3moe-a3b-4l as qwen3moe, the DeepSeek-V4 shapes as deepseek4 (its part:
// synthetic_gguf_deepseek4.cpp). Seeded N(0, 0.02) weights, unit norms, a placeholder SentencePiece vocabulary
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
