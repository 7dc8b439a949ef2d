// A select index's page (kv_sparse_mode select's sketch: kv_layout.h's SelectIndex stream): one KV head's
// block_size records stored by columns — the rows' fp16 scales, then the codes kIndexColumnBytes at a time, each
// column's rows contiguous — so one VNNI instruction scores 16 rows x 4 code bytes (cpu_avx512/
// index_score_avx512.cpp). The same bytes as block_size row-major records [fp16 scale | codes] (kv_codec.h).
// Must not know: which layer or sequence owns the page.
#pragma once
#include <algorithm>
#include <cstdint>

namespace slimkv {

inline constexpr int32_t kIndexColumnBytes = 4;

// Where byte b of row `row`'s record lies in its page (record_bytes = 2 + code bytes).
inline int64_t index_record_byte(int32_t block_size, int64_t record_bytes, int32_t row, int64_t b) {
  if (b < 2) return 2 * static_cast<int64_t>(row) + b;
  const int64_t c = b - 2, column = c / kIndexColumnBytes, codes = record_bytes - 2;
  const int64_t width = std::min<int64_t>(kIndexColumnBytes, codes - column * kIndexColumnBytes);
  return 2 * static_cast<int64_t>(block_size) + column * kIndexColumnBytes * block_size + row * width +
         c % kIndexColumnBytes;
}

// Row `row`'s record (record_bytes, as kv_codec.h writes it) into / out of its page.
inline void store_index_record(uint8_t* page, int32_t block_size, int64_t record_bytes, int32_t row,
                               const uint8_t* record) {
  for (int64_t b = 0; b < record_bytes; ++b) page[index_record_byte(block_size, record_bytes, row, b)] = record[b];
}
inline void load_index_record(const uint8_t* page, int32_t block_size, int64_t record_bytes, int32_t row,
                              uint8_t* record) {
  for (int64_t b = 0; b < record_bytes; ++b) record[b] = page[index_record_byte(block_size, record_bytes, row, b)];
}

}  // namespace slimkv
