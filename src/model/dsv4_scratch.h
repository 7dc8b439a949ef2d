// DeepSeek-V4's per-step scratch inside DecoderForward (hyper_connection.cpp, dsv4_block.cpp): the hyper-connection
// streams and mixes, the attention's projections, compressor rows and indexer scores.
// Must not know: KV block tables (the forward batch's page tables say where records live).
#pragma once
#include <cstdint>
#include <vector>

namespace slimkv {

struct Dsv4Scratch {
  std::vector<float> streams;   // [T, hc, dim] the residual streams
  std::vector<float> tmp;       // [T, hc, dim] streams being rewritten
  std::vector<float> flat;      // [T, hc * dim] RMS-normed streams (the mixes' input)
  std::vector<float> mix;       // [T, (2 + hc) * hc] mixes of the current site
  std::vector<float> post;      // [T, hc] post weights of the current site
  std::vector<float> comb;      // [T, hc * hc] Sinkhorn-normalised combine matrix, element (dst, src) at dst + hc*src
  // attention
  std::vector<float> qr;        // [T, q_lora] normed q LoRA
  std::vector<float> q;         // [T, H * D] per-head normed, roped queries
  std::vector<float> kv;        // [T, D] the token's K = V record
  std::vector<float> o;         // [T, H * D] attention output (de-roped)
  std::vector<float> gin;       // [T, heads_per_group * D] one output group's input
  std::vector<float> gout;      // [T, o_lora]
  std::vector<float> oa;        // [T, o_groups * o_lora]
  std::vector<float> st_kv, st_sc;    // [T, coff * D] compressor rows (kv, gate score + ape)
  std::vector<float> st_rec;          // [coff * 2 * D] one state record
  std::vector<float> iq;        // [T, index_heads * index_dim] indexer queries (roped, rotated)
  std::vector<float> iw;        // [T, index_heads] indexer head weights
  std::vector<int32_t> topk;    // [T, top_k] chosen compressed entries per token (-1 = none)
  std::vector<int32_t> ntopk;   // [T] how many
  std::vector<float> entry;     // [max(D, index_dim)] one compressed entry being built
};

}  // namespace slimkv
