// The hyper-parameter keys families read, each with its GGUF name (after "<arch>.") and its Hugging Face
// config.json name(s), and one reader per format behind one interface, so a family reads its keys once for both.
// A missing required key or a value of the wrong type is a clear error naming the key as the file spells it.
// Must not know: any family (families/*.cpp use it) or tensors.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace slimkv {

class GgufFile;

enum class Hp {
  ContextLength, EmbeddingLength, BlockCount, FeedForwardLength, HeadCount, HeadCountKv, KeyLength, ValueLength,
  RmsEps, RopeDimensionCount, RopeFreqBase, RopeFreqBaseSwa, SlidingWindow, SlidingWindowPattern, VocabSize,
  RopeScalingType, RopeScalingFactor, RopeScalingOrigCtx, RopeScalingLowFreqFactor, RopeScalingHighFreqFactor,
  RopeScalingBetaFast, RopeScalingBetaSlow, RopeScalingAttnFactor, PartialRotaryFactor,
  ExpertCount, ExpertUsedCount, ExpertFeedForwardLength, ExpertSharedFeedForwardLength, ExpertWeightsNorm,
  FinalLogitSoftcap, QueryPreAttnScalar, TieWordEmbeddings,
  // DeepSeek (MLA, DeepSeekMoE)
  QLoraRank, KvLoraRank, KeyLengthMla, ValueLengthMla, QkRopeHeadDim, QkNopeHeadDim, LeadingDenseBlockCount,
  ExpertSharedCount, ExpertWeightsScale, ExpertGatingFunc, ExpertGroupCount, ExpertGroupUsedCount,
  RopeScalingYarnLogMul, RopeScalingMscaleAllDim, ScoringFunc,
  // DeepSeek-V4 (compressed attention, lightning indexer, hyper-connections, hash routing)
  SwigluClampExp, SwigluClampShexp, IndexerHeadCount, IndexerKeyLength, IndexerTopK, OutputGroupCount,
  OutputLoraRank, CompressRatios, CompressRopeFreqBase, HcCount, HcSinkhornIters, HcEps, HashLayerCount,
  NextnPredictLayers, PoolingType,
  // Gated DeltaNet (Qwen3-Next's linear-attention layers, stored under llama.cpp's ssm.* keys)
  SsmConvKernel, SsmStateSize, SsmGroupCount, SsmTimeStepRank, SsmInnerSize, FullAttentionInterval, RecurrentLayers,
};

class HParams {
 public:
  virtual ~HParams() = default;
  // Where the values come from ("model.gguf", "dir/config.json") and the key as that file names it.
  virtual std::string source() const = 0;
  virtual std::string key_name(Hp k) const = 0;
  virtual bool has(Hp k) const = 0;
  virtual bool is_gguf() const = 0;

  // Typed reads; each throws "<source>: '<key>' ..." when present with the wrong type.
  virtual std::optional<double> number(Hp k) const = 0;
  virtual std::optional<std::string> string(Hp k) const = 0;
  virtual std::optional<bool> boolean(Hp k) const = 0;
  // A scalar repeated per layer, or an array with one value per layer.
  virtual std::optional<std::vector<int64_t>> per_layer(Hp k, int32_t num_layers) const = 0;
  // A real scalar repeated per layer, or an array of reals with one value per layer.
  virtual std::optional<std::vector<double>> per_layer_real(Hp k, int32_t num_layers) const = 0;

  // Required integer in [lo, hi] ("missing '<key>'" when absent and no default is given).
  int32_t integer(Hp k, std::optional<int64_t> fallback = std::nullopt, int64_t lo = 0, int64_t hi = 1ll << 30) const;
  float real(Hp k, std::optional<double> fallback = std::nullopt) const;
  std::vector<int32_t> layer_ints(Hp k, int32_t num_layers, std::optional<int64_t> fallback = std::nullopt) const;
};

// The key table: each key's GGUF suffix and HF config.json paths ("" / empty when the format has none).
struct HpName {
  Hp key;
  const char* gguf;             // after "<arch>."
  std::vector<const char*> hf;  // config.json paths ("a.b" = nested), first present wins
};
const std::vector<HpName>& hparam_names();

std::unique_ptr<HParams> gguf_hparams(const GgufFile& g, const std::string& arch);
// config.json's object (Gemma 3's multimodal configs keep the text model under "text_config": pass that).
std::unique_ptr<HParams> hf_hparams(const std::string& json_text, const std::string& source);

}  // namespace slimkv
