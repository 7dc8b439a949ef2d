// Fuzz target: arbitrary text through two real Hugging Face vocabularies (../shared/data/real-tokenizers: Qwen3 —
// NFC, byte-level BPE — and Mistral — Metaspace, byte fallback), with special-token parsing on and off, then
// decoded. Qwen3 must round-trip: decode(encode(text)) == NFC(text) for valid UTF-8 (else the target aborts).
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "core/check.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string shared_dir() {
  const char* env = std::getenv("SLIMKV_SHARED");
  return env ? env : "../shared";
}

struct Vocabularies {
  std::unique_ptr<slimkv::Tokenizer> qwen3, mistral;
  slimkv::Normalizer nfc{{slimkv::NormalizeStep(slimkv::NormalizeStep::kNfc)}};
};

const Vocabularies& vocabularies() {
  static const Vocabularies v = [] {
    Vocabularies out;
    const std::string dir = shared_dir() + "/data/real-tokenizers/";
    out.qwen3 = slimkv::load_hf_tokenizer(dir + "qwen3");
    out.mistral = slimkv::load_hf_tokenizer(dir + "mistral");
    return out;
  }();
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Vocabularies& v = vocabularies();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (bool parse_special : {false, true}) {
    const auto ids = v.qwen3->encode(text, slimkv::EncodeOptions{false, parse_special});
    const std::string back = v.qwen3->decode(ids, slimkv::DecodeOptions{false});
    if (back != v.nfc.apply(slimkv::sanitize_utf8(text))) std::abort();  // byte-level BPE loses nothing
    const auto mids = v.mistral->encode(text, slimkv::EncodeOptions{true, parse_special});
    v.mistral->decode(mids, slimkv::DecodeOptions{parse_special});
    for (int32_t id : mids) {
      if (id < 0 || id >= v.mistral->vocab_size()) std::abort();
    }
  }
  return 0;
}
