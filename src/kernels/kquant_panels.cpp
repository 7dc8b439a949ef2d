#include "kernels/kquant_panels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/half.h"

namespace slimkv {
namespace {

constexpr int64_t kSuper = 256;

// One super-block of one row as integers: raw codes (nibble plus high bits; IQ4_XS the table index), sub-block
// scales and mins, and the fp16 scales.
struct Decoded {
  uint8_t code[kSuper];
  int8_t sc[16];
  uint8_t m[8];
  uint16_t d = 0, dmin = 0;
};

void decode(DType t, const uint8_t* block, Decoded& out) {
  if (t == DType::Q4_K || t == DType::Q5_K) {
    const bool q5 = t == DType::Q5_K;
    const auto* b4 = reinterpret_cast<const Q4_KBlock*>(block);
    const auto* b5 = reinterpret_cast<const Q5_KBlock*>(block);
    const uint8_t* scales = q5 ? b5->scales : b4->scales;
    const uint8_t* qs = q5 ? b5->qs : b4->qs;
    out.d = q5 ? b5->d : b4->d;
    out.dmin = q5 ? b5->dmin : b4->dmin;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      k_scale_min(j, scales, &sc, &m);
      out.sc[j] = static_cast<int8_t>(sc);
      out.m[j] = m;
    }
    for (int e = 0; e < kSuper; ++e) {
      const int c = e / 64, l = e % 64;
      uint8_t q = l < 32 ? qs[32 * c + l] & 0xF : qs[32 * c + l - 32] >> 4;
      if (q5) q |= ((b5->qh[e % 32] >> (e / 32)) & 1) << 4;
      out.code[e] = q;
    }
  } else if (t == DType::Q6_K) {
    const auto* b = reinterpret_cast<const Q6_KBlock*>(block);
    out.d = b->d;
    std::copy_n(b->scales, 16, out.sc);
    for (int e = 0; e < kSuper; ++e) {
      const int n = e / 128, quarter = (e % 128) / 32, l = e % 32;
      const uint8_t ql = b->ql[64 * n + l + 32 * (quarter & 1)];
      const uint8_t lo = quarter < 2 ? ql & 0xF : ql >> 4;
      out.code[e] = static_cast<uint8_t>(lo | (((b->qh[32 * n + l] >> (2 * quarter)) & 3) << 4));
    }
  } else {
    SLIMKV_CHECK(t == DType::IQ4_XS, "kquant panels: {} is not a panel type", dtype_name(t));
    const auto* b = reinterpret_cast<const IQ4_XSBlock*>(block);
    out.d = b->d;
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = ((b->scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((b->scales_h >> 2 * ib) & 3) << 4);
      out.sc[ib] = static_cast<int8_t>(ls - 32);
    }
    for (int e = 0; e < kSuper; ++e) {
      const int ib = e / 32, j = e % 32;
      out.code[e] = j < 16 ? b->qs[16 * ib + j] & 0xF : b->qs[16 * ib + j - 16] >> 4;
    }
  }
}

// Element of vector v, half h, byte i (the layout in the header).
inline int element(int v, int h, int i) { return 64 * (v / 8) + 32 * h + 4 * (v % 8) + i; }

// The code of row i (in its panel) at element e, read back from a unit.
uint8_t unit_code(const KQuantPanels& q, const uint8_t* u, int i, int e) {
  const int v = 8 * (e / 64) + (e % 32) / 4, h = (e % 64) / 32, b = e % 4;
  uint8_t code = (u[v * 64 + i * 4 + b] >> (4 * h)) & 0xF;
  const auto* hb = reinterpret_cast<const uint64_t*>(u + q.hbits_offset());
  for (int j = 0; j < q.planes(); ++j) code |= ((hb[(v * 2 + h) * q.planes() + j] >> (4 * i + b)) & 1) << (4 + j);
  return code;
}

int32_t unsigned_code(DType t, uint8_t code) {
  return t == DType::IQ4_XS ? kIq4nlValues[code] + 128 : code;
}

}  // namespace

bool has_kquant_panels(DType t) {
  return t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K || t == DType::IQ4_XS;
}

KQuantPanels kquant_panels(const WeightView& w) {
  return {static_cast<const uint8_t*>(w.data), w.dtype, w.cols / kSuper};
}

int64_t kquant_panel_bytes(const WeightView& w) {
  const KQuantPanels q{nullptr, w.dtype, w.cols / kSuper};
  return (w.rows + kPanelRows - 1) / kPanelRows * q.nsb * q.unit_bytes();
}

WeightView pack_kquant_panels(const WeightView& w, uint8_t* dst) {
  SLIMKV_CHECK(has_kquant_panels(w.dtype) && !w.panel, "pack_kquant_panels: needs a row-major K-quant view");
  const KQuantPanels q{dst, w.dtype, w.cols / kSuper};
  std::fill(dst, dst + kquant_panel_bytes(w), uint8_t{0});
  const int64_t block_bytes = dtype_block_bytes(w.dtype);
  Decoded dec;
  for (int64_t r = 0; r < w.rows; ++r) {
    const int64_t p = r / kPanelRows;
    const int i = static_cast<int>(r % kPanelRows);
    for (int64_t k = 0; k < q.nsb; ++k) {
      decode(w.dtype, w.row(r) + k * block_bytes, dec);
      auto* u = const_cast<uint8_t*>(q.unit(p, k));
      auto* hb = reinterpret_cast<uint64_t*>(u + q.hbits_offset());
      for (int v = 0; v < 32; ++v) {
        for (int h = 0; h < 2; ++h) {
          for (int b = 0; b < 4; ++b) {
            const uint8_t code = dec.code[element(v, h, b)];
            u[v * 64 + i * 4 + b] |= static_cast<uint8_t>((code & 0xF) << (4 * h));
            for (int j = 0; j < q.planes(); ++j) {
              hb[(v * 2 + h) * q.planes() + j] |= static_cast<uint64_t>((code >> (4 + j)) & 1) << (4 * i + b);
            }
          }
        }
      }
      auto* d = reinterpret_cast<uint16_t*>(u + q.d_offset());
      d[i] = dec.d;
      if (q.has_mins()) d[16 + i] = dec.dmin;
      auto* sc = reinterpret_cast<int8_t*>(u + q.sc_offset());
      for (int s = 0; s < q.subs(); ++s) sc[s * 16 + i] = dec.sc[s];
      if (q.has_mins()) {
        uint8_t* m = u + q.m_offset();
        for (int j = 0; j < 4; ++j) {
          m[(j * 16 + i) * 2] = dec.m[2 * j];
          m[(j * 16 + i) * 2 + 1] = dec.m[2 * j + 1];
        }
      }
    }
  }
  WeightView v = w;
  v.data = dst;
  v.panel = true;
  return v;
}

void kquant_panel_terms(DType t, const Q8_KBlock* x, int64_t num_tokens, int64_t nsb, int32_t* terms) {
  for (int64_t b = 0; b < num_tokens * nsb; ++b) {
    const int16_t* bs = x[b].bsums;
    int32_t* out = terms + b * 16;
    std::fill(out, out + 16, 0);
    if (t == DType::Q6_K) {
      for (int s = 0; s < 16; ++s) out[s] = -32 * bs[s];
    } else if (t == DType::IQ4_XS) {
      for (int s = 0; s < 8; ++s) out[s] = -128 * (bs[2 * s] + bs[2 * s + 1]);
    } else {  // Q4_K / Q5_K: sub-block sums 2j and 2j + 1 as one int16 pair
      for (int j = 0; j < 4; ++j) {
        const auto lo = static_cast<uint16_t>(bs[4 * j] + bs[4 * j + 1]);
        const auto hi = static_cast<uint16_t>(bs[4 * j + 2] + bs[4 * j + 3]);
        out[j] = static_cast<int32_t>(static_cast<uint32_t>(lo) | static_cast<uint32_t>(hi) << 16);
      }
    }
  }
}

void matmul_kquant_panels_ref(const WeightView& w, const Q8_KBlock* x, const int32_t* terms, int64_t num_tokens,
                              float* y, int64_t r0, int64_t r1) {
  const KQuantPanels q = kquant_panels(w);
  const int sub_len = kSuper / q.subs();
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t p = r / kPanelRows;
    const int i = static_cast<int>(r % kPanelRows);
    for (int64_t t = 0; t < num_tokens; ++t) {
      float acc = 0;
      for (int64_t k = 0; k < q.nsb; ++k) {
        const uint8_t* u = q.unit(p, k);
        const Q8_KBlock& a = x[t * q.nsb + k];
        const int32_t* term = terms + (t * q.nsb + k) * 16;
        const auto* sc = reinterpret_cast<const int8_t*>(u + q.sc_offset());
        int32_t sumi = 0, summ = 0;
        for (int s = 0; s < q.subs(); ++s) {
          int32_t isum = q.has_mins() ? 0 : term[s];
          for (int e = s * sub_len; e < (s + 1) * sub_len; ++e) isum += unsigned_code(q.dtype, unit_code(q, u, i, e)) * a.qs[e];
          sumi += sc[s * 16 + i] * isum;
        }
        const auto* d = reinterpret_cast<const uint16_t*>(u + q.d_offset());
        acc = std::fma(static_cast<float>(sumi), fp16_to_fp32(d[i]) * a.d, acc);
        if (q.has_mins()) {
          const uint8_t* m = u + q.m_offset();
          for (int j = 0; j < 4; ++j) {
            const auto pair = static_cast<uint32_t>(term[j]);
            summ += m[(j * 16 + i) * 2] * static_cast<int16_t>(pair & 0xFFFF) +
                    m[(j * 16 + i) * 2 + 1] * static_cast<int16_t>(pair >> 16);
          }
          acc = std::fma(-static_cast<float>(summ), fp16_to_fp32(d[16 + i]) * a.d, acc);
        }
      }
      y[t * w.rows + r] = acc;
    }
  }
}

void dequantize_kquant_panel_row(const WeightView& w, int64_t r, float* out) {
  const KQuantPanels q = kquant_panels(w);
  const int64_t p = r / kPanelRows;
  const int i = static_cast<int>(r % kPanelRows);
  const int sub_len = kSuper / q.subs();
  for (int64_t k = 0; k < q.nsb; ++k, out += kSuper) {
    const uint8_t* u = q.unit(p, k);
    const auto* sc = reinterpret_cast<const int8_t*>(u + q.sc_offset());
    const auto* dh = reinterpret_cast<const uint16_t*>(u + q.d_offset());
    const float d = fp16_to_fp32(dh[i]);
    for (int e = 0; e < kSuper; ++e) {  // GGML's expressions, type by type
      const int s = e / sub_len;
      const uint8_t code = unit_code(q, u, i, e);
      if (q.dtype == DType::Q6_K) {
        out[e] = d * sc[s * 16 + i] * static_cast<int8_t>(code - 32);
      } else if (q.dtype == DType::IQ4_XS) {
        const float dl = d * sc[s * 16 + i];
        out[e] = dl * kIq4nlValues[code];
      } else {
        const uint8_t m = u[q.m_offset() + ((s / 2) * 16 + i) * 2 + s % 2];
        const float d1 = d * static_cast<uint8_t>(sc[s * 16 + i]), m1 = fp16_to_fp32(dh[16 + i]) * m;
        out[e] = d1 * code - m1;
      }
    }
  }
}

}  // namespace slimkv
