// Sizing natively compressed KV caches (DeepSeek-V4's CSA / HCA streams, DeepSeek-V3.2's MLA + indexer keys) from
// published configs, per layer kind: records per token, bytes per record in a stated storage format, bytes at a
// context. Pure arithmetic for `plan --preset deepseek-v4-flash | deepseek-v4-pro | deepseek-v3.2 | gqa8-{43,61}l-bf16`.
// Must not know: files, engines or the paged pool (a pool's block rounding is not counted here).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace slimkv {

struct NativeKvKind {
  std::string name;            // "CSA entries (1:4)"
  int64_t layers = 0;          // layers holding this stream
  int64_t tokens_per_record = 1;  // 4: one record per 4 tokens
  int64_t window_tokens = 0;   // > 0: at most this many tokens are held (a sliding window)
  int64_t record_bytes = 0;    // one record in the stated storage
  std::string storage;         // "fp8 448 + bf16 64"
  bool per_sequence = false;   // a fixed per-sequence state, not proportional to the context
  int64_t records(int64_t ctx) const;   // held by one sequence of ctx tokens
  int64_t bytes(int64_t ctx) const { return layers * records(ctx) * record_bytes; }
};

struct NativeKvShape {
  std::string name, source;    // preset name, where its numbers come from
  int64_t num_layers = 0;
  std::vector<NativeKvKind> kinds;
  int64_t bytes(int64_t ctx) const;  // summed over kinds (per-sequence state included)
  int64_t context_bytes(int64_t ctx) const;  // ... excluding per-sequence state
};

bool is_native_kv_preset(const std::string& name);
std::vector<std::string> native_kv_preset_names();
NativeKvShape native_kv_preset(const std::string& name);  // throws on an unknown name

}  // namespace slimkv
