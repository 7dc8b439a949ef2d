// TEMPORARY weak stand-ins until the GGUF/HF tokenizer files land (removed before commit).
#include "core/check.h"
#include "tokenizer/tokenizer.h"
namespace slimkv {
__attribute__((weak)) std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile&) { fail("pending"); }
__attribute__((weak)) std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::string&) { fail("pending"); }
}
