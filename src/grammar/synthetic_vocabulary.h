// A synthetic, text-like vocabulary for tests and benchmarks when no real one is at hand: every single byte,
// JSON punctuation, digits, spaces, common words with and without a leading space, and random byte strings of
// 1-12 bytes drawn from text-like distributions. Owns: synthetic_token_bytes. Must not know: real tokenizers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace slimkv::grammar {

// n token byte strings (n >= 300), seeded; id n-1 is left "" for the caller to use as an EOS id.
std::vector<std::string> synthetic_token_bytes(size_t n, uint64_t seed);

}  // namespace slimkv::grammar
