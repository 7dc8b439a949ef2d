// DeepSeek-V4's discrete choices against llama.cpp's dumps (../shared/models/synthetic/deepseek4/*.aux): the
// lightning indexer's top-k entries per token and the experts each token is routed to (hash layers: the
// tid2eid table; score layers: the top-k by sqrt-softplus + bias), equal wherever llama.cpp's recorded margin
// (chosen vs best unchosen score) exceeds a tolerance that covers rounding; prefill in one batch and in chunks that
// split compression groups.
#include <gtest/gtest.h>

#include <map>

#include "reference_helpers.h"

namespace slimkv::test {
namespace {

struct Choices {  // [layer][token] sorted ids
  std::map<int32_t, std::vector<std::vector<int32_t>>> indexer, experts;
};

Choices run_choices(const Model& m, const std::vector<int32_t>& ids, int32_t chunk, ThreadPool* pool) {
  const int32_t n = static_cast<int32_t>(ids.size()), c = chunk > 0 ? chunk : n;
  SequenceForward fwd(m, pool, n, 16, c);
  Choices out;
  int32_t base = 0;
  fwd.forward_pass().set_choice_observer([&](const char* what, int32_t l, int32_t t, const int32_t* v, int32_t k) {
    auto& table = std::string(what) == "indexer" ? out.indexer[l] : out.experts[l];
    table.resize(n);
    table[base + t].assign(v, v + k);
    std::sort(table[base + t].begin(), table[base + t].end());
  });
  std::vector<float> logits(static_cast<size_t>(n) * m.config.vocab_size);
  for (int32_t p = 0; p < n; p += c) {
    base = p;
    const int32_t len = std::min(c, n - p);
    fwd.forward(std::span<const int32_t>(ids).subspan(p, len), p, true,
                logits.data() + static_cast<size_t>(p) * m.config.vocab_size);
  }
  return out;
}

std::vector<int32_t> read_i32(const std::string& path) {
  const std::string bytes = read_text_file(path);
  std::vector<int32_t> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

// Rows of llama.cpp's choice tensor ([k per row] or the first k of an argsort row of width w), sorted.
std::vector<std::vector<int32_t>> rows_of(const std::vector<int32_t>& flat, int32_t width, int32_t k) {
  std::vector<std::vector<int32_t>> rows;
  for (size_t r = 0; r + width <= flat.size(); r += width) {
    std::vector<int32_t> v(flat.begin() + r, flat.begin() + r + k);
    std::sort(v.begin(), v.end());
    rows.push_back(v);
  }
  return rows;
}

void check(const std::vector<std::vector<int32_t>>& got, const std::vector<std::vector<int32_t>>& want,
           const std::vector<float>* margins, double tol, const std::string& what, int32_t* compared) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t t = 0; t < want.size(); ++t) {
    if (margins && (*margins)[t] <= tol) continue;
    std::vector<int32_t> w = want[t];
    w.erase(std::remove_if(w.begin(), w.end(), [](int32_t x) { return x < 0; }), w.end());
    if (w.size() > got[t].size()) w.resize(got[t].size());  // llama.cpp's masked (-inf) picks beyond the visible
    EXPECT_EQ(got[t], w) << what << " token " << t << " (margin " << (margins ? (*margins)[t] : -1.0f) << ")";
    ++*compared;
  }
}

class Deepseek4Aux : public ::testing::TestWithParam<std::string> {};

TEST_P(Deepseek4Aux, IndexerAndRouterChoicesMatchLlamaCpp) {
  const std::string name = GetParam();
  const std::string base = synthetic_dir() + "/deepseek4/deepseek4-" + name;
  SKIP_IF_MISSING(base + ".gguf");
  auto m = load(base + ".gguf");
  const std::vector<int32_t> ids = read_ids_file(synthetic_dir() + "/prompts/p320.ids");
  const std::string aux = base + ".aux/";
  const double tol = name == "F32" ? 1e-3 : 1e-2;  // quantized activations move the scores more
  ThreadPool pool(2);
  for (int32_t chunk : {0, 7, 130}) {
    const Choices c = run_choices(*m, ids, chunk, &pool);
    int32_t compared = 0;
    const std::string path = fmt::format("chunk {}", chunk);
    const std::vector<float> lid_margin = read_f32_file(aux + "margins_indexer_topk-1.f32");
    std::vector<std::vector<int32_t>> lid = rows_of(read_i32(aux + "0004_lid_top_k-1.bin"), 8, 8);
    for (size_t t = 0; t < lid.size(); ++t) {  // keep llama.cpp's picks among the entries visible to the token
      const int32_t nvis = (static_cast<int32_t>(t) + 1) / 4;
      lid[t].erase(std::remove_if(lid[t].begin(), lid[t].end(), [&](int32_t e) { return e >= nvis; }), lid[t].end());
    }
    std::vector<std::vector<int32_t>> got_lid = c.indexer.at(1);
    check(got_lid, lid, &lid_margin, tol, path + " indexer layer 1", &compared);
    check(c.experts.at(0), rows_of(read_i32(aux + "0001_ffn_moe_topk-0.bin"), 2, 2), nullptr, 0, path + " hash layer 0",
          &compared);
    for (int32_t l : {1, 2}) {
      const std::vector<float> mm = read_f32_file(aux + fmt::format("margins_moe_topk-{}.f32", l));
      const std::string file = fmt::format("{:04d}_ffn_moe_argsort-{}.bin", l == 1 ? 7 : 11, l);
      check(c.experts.at(l), rows_of(read_i32(aux + file), 4, 2), &mm, tol, path + fmt::format(" experts layer {}", l),
            &compared);
    }
    EXPECT_GT(compared, 900) << path;
  }
}

INSTANTIATE_TEST_SUITE_P(Synthetic, Deepseek4Aux, ::testing::Values("F32", "Q8_0"));

}  // namespace
}  // namespace slimkv::test
