// The pieces every synthetic GGUF writer shares (model/synthetic_gguf.cpp, one writer per architecture): seeded
// N(0, 0.02) matrices stored in the requested type, unit norms, small F32 vectors, the placeholder vocabulary.
// Must not know: any architecture's keys or tensor names.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "formats/gguf_writer.h"
#include "model/model_config.h"

namespace slimkv {

class SyntheticTensors {
 public:
  SyntheticTensors(GgufWriter& writer, DType dtype, uint64_t seed);
  // [experts x] rows x cols of N(0, 0.02) stored as the writer's type (F32 where a row does not fill its blocks);
  // ggml dims {cols, rows[, experts]}.
  void matrix(const std::string& name, int64_t rows, int64_t cols, int64_t experts = 0);
  void ones(const std::string& name, int64_t count);
  // F32 values N(mean, sd) with the given ggml dims (a vector when dims has one entry).
  void values(const std::string& name, const std::vector<int64_t>& dims, float mean, float sd);

 private:
  GgufWriter& w_;
  DType dtype_;
  std::mt19937_64 rng_;
  std::normal_distribution<float> dist_;  // the matrices' (one stream across them: files stay as written before)
};

// A SentencePiece ("llama") vocabulary of vocab_size tokens: <unk> <s> </s>, the 256 byte tokens, then fillers.
void add_placeholder_vocab(GgufWriter& w, int32_t vocab_size);

// llama.cpp's general.file_type (LLAMA_FTYPE_*) for the uniform types F32 / F16 / Q4_0 / Q8_0; others leave it out.
void add_file_type(GgufWriter& w, DType dtype);

// The DeepSeek-V4 (`deepseek4`) writer: keys as llama.cpp's converter writes them, every layer kind of the shape.
void write_deepseek4_synthetic(const ModelConfig& c, GgufWriter& w, SyntheticTensors& t);

}  // namespace slimkv
