// Q4_K / Q5_K / Q6_K / IQ4_XS weights interleaved 16 rows at a time (issue P; llama.cpp repacks Q4_K and IQ4 the
// same way): one VNNI instruction multiplies 4 values of 16 rows by the same 4 activations, and the sub-block
// scales are applied once per sub-block to 16 rows at a time. Owns the layout, the repacking, its scalar reference
// matmul and the per-token activation terms its kernels share. Must not know: threads, layers, ISAs.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/quant_blocks.h"
#include "kernels/matmul.h"

namespace slimkv {

// Per panel of 16 rows, per 256-value super-block k, one 64-byte aligned unit:
//   qs    [32 vectors][16 rows][4 bytes]: vector v, row r, byte i holds, in its low nibble, bits 0-3 of the row's
//         element 64 (v / 8) + 4 (v % 8) + i and, in its high nibble, those of the element 32 further on
//   hbits [32 vectors][2 halves][planes] uint64 (Q5_K: 1 plane, Q6_K: 2): bit 4r + i of plane j = bit 4 + j of
//         that element (half 0: low-nibble element, 1: high)
//   d     [16] fp16, dmin [16] fp16 (Q4_K, Q5_K)
//   sc    [subs][16] int8: each sub-block's scale (Q4_K / Q5_K / IQ4_XS: 8 subs of 32; Q6_K: 16 subs of 16)
//   m     [4][16][2] uint8 (Q4_K, Q5_K): mins of sub-blocks 2j and 2j + 1 side by side (int16 pairs once widened)
// A value's unsigned code u: Q4_K the nibble, Q5_K + 16 bit 4, Q6_K + 32 bit 5 (value - 32 in the block's
// units), IQ4_XS kIq4nlValues[nibble] + 128. Rows past the matrix: zero scales and codes.
struct KQuantPanels {
  const uint8_t* base = nullptr;
  DType dtype = DType::Q4_K;
  int64_t nsb = 0;  // super-blocks per row
  static constexpr int64_t kQsBytes = 2048;
  int planes() const { return dtype == DType::Q5_K ? 1 : dtype == DType::Q6_K ? 2 : 0; }
  int subs() const { return dtype == DType::Q6_K ? 16 : 8; }
  bool has_mins() const { return dtype == DType::Q4_K || dtype == DType::Q5_K; }
  int64_t hbits_offset() const { return kQsBytes; }
  int64_t d_offset() const { return kQsBytes + planes() * 512; }
  int64_t sc_offset() const { return d_offset() + (has_mins() ? 64 : 32); }
  int64_t m_offset() const { return sc_offset() + subs() * 16; }
  int64_t unit_bytes() const { return (m_offset() + (has_mins() ? 128 : 0) + 63) / 64 * 64; }
  const uint8_t* unit(int64_t p, int64_t k) const { return base + (p * nsb + k) * unit_bytes(); }
};

bool has_kquant_panels(DType t);  // Q4_K, Q5_K, Q6_K, IQ4_XS
KQuantPanels kquant_panels(const WeightView& w);
int64_t kquant_panel_bytes(const WeightView& w);
WeightView pack_kquant_panels(const WeightView& w, uint8_t* dst);  // dst: kquant_panel_bytes, 64-byte aligned

// Each token's per-super-block integer terms, [T][nsb][16] int32, from its Q8_K blocks: Q4_K / Q5_K the sums of
// its 8 sub-blocks of 32 as 4 int16 pairs (for the mins); Q6_K -32 x the sums of its 16 sub-blocks of 16;
// IQ4_XS -128 x the sums of its 8 sub-blocks of 32 (the codes' offsets, added to each sub-block's integer dot).
void kquant_panel_terms(DType t, const Q8_KBlock* x, int64_t num_tokens, int64_t nsb, int32_t* terms);

// The scalar reference over rows [r0, r1), all tokens: per (row, token), per super-block, sumi = sum over
// sub-blocks of sc x (its codes . activations + term), summ = sum of mins x pair sums; then
// acc = fma(sumi, d dx, acc), acc = fma(-summ, dmin dx, acc) in super-block order.
void matmul_kquant_panels_ref(const WeightView& w, const Q8_KBlock* x, const int32_t* terms, int64_t num_tokens,
                              float* y, int64_t r0, int64_t r1);

// Row r dequantized from the panels, bit-identical to GGML's dequantization of the original row.
void dequantize_kquant_panel_row(const WeightView& w, int64_t r, float* out);

}  // namespace slimkv
