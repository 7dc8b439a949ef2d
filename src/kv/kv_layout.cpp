#include "kv/kv_layout.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/check.h"
#include "kv/kv_group_table.h"

namespace slimkv {

KvGroupSpec KvGroupSpec::window(int32_t window, int32_t sinks) {
  SLIMKV_CHECK(window > 0 && sinks >= 0, "KV group: a window of {} tokens with {} sinks", window, sinks);
  KvGroupSpec s;
  s.kind = KvGroupKind::Window;
  s.window_tokens = window;
  s.sink_tokens = sinks;
  return s;
}

KvGroupSpec KvGroupSpec::dynamic_topk(int32_t topk, int32_t sinks, int32_t window, bool merge,
                                      int32_t prefill_evict_tokens) {
  SLIMKV_CHECK(topk > 0, "KV group: a dynamic top-{} budget", topk);
  KvGroupSpec s;
  s.kind = KvGroupKind::DynamicTopK;
  s.dyn_topk_tokens = topk;
  s.dyn_sink_tokens = sinks;
  s.dyn_window_tokens = window;
  s.dyn_merge = merge;
  s.dyn_prefill_evict_tokens = prefill_evict_tokens;
  return s;
}

KvGroupSpec KvGroupSpec::entries(int32_t entry_tokens) {
  SLIMKV_CHECK(entry_tokens > 1, "KV group: entries of {} tokens", entry_tokens);
  KvGroupSpec s;
  s.kind = KvGroupKind::Entries;
  s.entry_tokens = entry_tokens;
  return s;
}

KvGroupSpec KvGroupSpec::recurrent() {
  KvGroupSpec s;
  s.kind = KvGroupKind::Recurrent;
  return s;
}

std::string KvGroupSpec::describe() const {
  switch (kind) {
    case KvGroupKind::FullAttention: return "full attention";
    case KvGroupKind::Recurrent: return "recurrent state";
    case KvGroupKind::Entries: return fmt::format("compressed 1:{}", entry_tokens);
    case KvGroupKind::Window:
      return sink_tokens > 0 ? fmt::format("window {} + {} sinks", window_tokens, sink_tokens)
                             : fmt::format("sliding window {}", window_tokens);
    case KvGroupKind::DynamicTopK:
      return fmt::format("dynamic top-{} (sinks {}, recent {}{}{})", dyn_topk_tokens, dyn_sink_tokens,
                         dyn_window_tokens, dyn_merge ? ", merge" : "",
                         dyn_prefill_evict_tokens > 0 ? fmt::format(", evicting every {} prompt tokens",
                                                                    dyn_prefill_evict_tokens)
                                                      : std::string());
  }
  return "?";
}

KvLayout KvLayout::uniform(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim, int32_t block_size_tokens,
                           KvDtype dtype, bool rotate) {
  KvLayout l;
  l.block_size_tokens = block_size_tokens;
  KvLayerGeometry g;
  g.num_kv_heads = num_kv_heads;
  g.head_dim_k = g.head_dim_v = g.k_dim = g.v_dim = head_dim;
  g.dtype = g.v_dtype = dtype;
  g.rotate = rotate;
  l.layers.assign(num_layers, g);
  l.assign_groups();
  return l;
}

KvLayout KvLayout::from_specs(const std::vector<KvLayerSpec>& specs, int32_t block_size_tokens) {
  KvLayout l;
  l.block_size_tokens = block_size_tokens;
  for (const KvLayerSpec& s : specs) {
    KvLayerGeometry g;
    g.num_kv_heads = s.num_kv_heads;
    g.head_dim_k = g.k_dim = s.head_dim_k;
    g.head_dim_v = g.v_dim = s.head_dim_v;
    SLIMKV_CHECK(!(s.window_tokens > 0 && s.entry_tokens > 1), "KV layout: a stream both windowed and compressed");
    if (s.window_tokens > 0) g.spec = KvGroupSpec::window(s.window_tokens);
    if (s.entry_tokens > 1) g.spec = KvGroupSpec::entries(s.entry_tokens);
    g.v_in_k = s.v_in_k;
    if (s.state_floats > 0) {  // one state per sequence: a block's records hold it, block_size of them
      SLIMKV_CHECK(s.kind == KvRecordKind::State && s.window_tokens == 0 && s.entry_tokens <= 1 && s.num_kv_heads == 1,
                   "KV layout: a recurrent state stream must be one plain State record");
      g.spec = KvGroupSpec::recurrent();
      g.head_dim_k = g.k_dim = static_cast<int32_t>((s.state_floats + block_size_tokens - 1) / block_size_tokens);
      g.head_dim_v = g.v_dim = 0;
      g.v_in_k = true;  // no V region
    }
    g.kind = s.kind;
    if (s.kind == KvRecordKind::IndexKeys) g.dtype = g.v_dtype = KvDtype::F16;  // as llama.cpp stores indexer keys
    l.layers.push_back(g);
  }
  l.assign_groups();
  return l;
}

void KvLayout::assign_groups() {
  SLIMKV_CHECK(!layers.empty(), "KV layout: no layers");
  // Streams of different record sizes (DeepSeek-V4) get a pool per size: the size joins the group spec.
  const bool native = std::any_of(layers.begin(), layers.end(), [](const KvLayerGeometry& g) {
    return g.spec.compressed() || g.kind != KvRecordKind::Attention;
  });
  std::vector<int32_t> rep;  // [pool] a layer with that pool's record
  for (KvLayerGeometry& g : layers) {
    g.spec.pool = 0;
    if (!native) continue;
    int32_t p = -1;
    for (size_t i = 0; i < rep.size() && p < 0; ++i) p = layers[rep[i]].same_record(g) ? static_cast<int32_t>(i) : -1;
    if (p < 0) {
      p = static_cast<int32_t>(rep.size());
      rep.push_back(static_cast<int32_t>(&g - layers.data()));
    }
    g.spec.pool = p;
  }
  std::vector<KvGroupSpec> specs;           // distinct, in order of first use
  std::vector<std::vector<int32_t>> by_spec;
  for (int32_t l = 0; l < num_layers(); ++l) {
    auto it = std::find(specs.begin(), specs.end(), layers[l].spec);
    if (it == specs.end()) {
      specs.push_back(layers[l].spec);
      by_spec.emplace_back();
      it = specs.end() - 1;
    }
    by_spec[it - specs.begin()].push_back(l);
  }
  size_t per_group = by_spec.front().size();
  for (const auto& v : by_spec) per_group = std::min(per_group, v.size());
  groups.clear();
  for (size_t s = 0; s < specs.size(); ++s) {
    for (size_t i = 0; i < by_spec[s].size(); i += per_group) {
      KvGroup g;
      g.spec = specs[s];
      g.layers.assign(by_spec[s].begin() + i, by_spec[s].begin() + std::min(by_spec[s].size(), i + per_group));
      groups.push_back(std::move(g));
    }
  }
  // Tensors: slot j of each group shares one when the records agree (a block id is used by one group at a time).
  tensor_layer.clear();
  tensor_pool.clear();
  for (size_t j = 0; j < per_group; ++j) {
    std::vector<int32_t> slot_tensors;  // tensors created for this slot
    for (int32_t gi = 0; gi < num_groups(); ++gi) {
      if (j >= groups[gi].layers.size()) continue;
      const int32_t l = groups[gi].layers[j];
      layers[l].group = gi;
      int32_t t = -1;
      for (int32_t cand : slot_tensors) {
        if (layers[tensor_layer[cand]].same_record(layers[l])) t = cand;
      }
      if (t < 0) {
        t = static_cast<int32_t>(tensor_layer.size());
        tensor_layer.push_back(l);
        tensor_pool.push_back(layers[l].spec.pool);
        slot_tensors.push_back(t);
      }
      layers[l].tensor = t;
    }
  }
}

std::vector<KvGroupSpec> group_specs(const KvLayout& layout) {
  std::vector<KvGroupSpec> out;
  for (const KvGroup& g : layout.groups) out.push_back(g.spec);
  return out;
}

int64_t KvLayout::bytes_per_token() const {
  int64_t b = 0;
  for (const auto& g : layers) b += g.bytes_per_token();
  return b;
}

int64_t KvLayout::bytes_per_block() const {
  int64_t b = 0;
  for (int32_t l : tensor_layer) b += layers[l].bytes_per_token();
  return b * block_size_tokens;
}

int64_t KvLayout::bytes_per_block(int32_t pool) const {
  int64_t b = 0;
  for (int32_t t = 0; t < num_tensors(); ++t) b += tensor_pool[t] == pool ? layers[tensor_layer[t]].bytes_per_token() : 0;
  return b * block_size_tokens;
}

int32_t KvLayout::num_model_streams() const {
  return static_cast<int32_t>(std::count_if(layers.begin(), layers.end(), [](const KvLayerGeometry& g) {
    return !g.appended();
  }));
}

int32_t KvLayout::num_pools() const {
  int32_t n = 1;
  for (const KvGroup& g : groups) n = std::max(n, g.spec.pool + 1);
  return n;
}

int32_t KvLayout::group_blocks_for_tokens(int32_t g, int64_t num_tokens) const {
  return blocks_for_tokens(groups[g].spec.records_for_tokens(num_tokens));
}

std::vector<int32_t> KvLayout::pool_blocks_for_tokens(int64_t num_tokens) const {
  std::vector<int32_t> out(num_pools(), 0);
  for (int32_t g = 0; g < num_groups(); ++g) out[groups[g].spec.pool] += group_blocks_for_tokens(g, num_tokens);
  for (int32_t& n : out) n = std::max(n, 1);  // storage needs a block per pool (short contexts of 1:r entries)
  return out;
}

int64_t KvLayout::blocks_for_sequence(int64_t n, int64_t chunk) const { return blocks_for_sequence(n, chunk, -1); }

int64_t KvLayout::blocks_for_sequence(int64_t n, int64_t chunk, int32_t pool) const {
  int64_t total = 0;
  for (const KvGroup& g : groups) {
    if (pool >= 0 && g.spec.pool != pool) continue;
    int64_t b = blocks_for_tokens(g.spec.records_for_tokens(n));
    // the live state, and a prefix hit's snapshot or a snapshot being taken; with drafts, their states
    if (g.spec.recurrent_state()) b = 2 + draft_state_blocks;
    if (g.spec.windowed()) {
      const int64_t keep = blocks_for_tokens(g.spec.sink_tokens) + blocks_for_tokens(g.spec.window_tokens + chunk) + 1;
      b = std::min(b, keep);
    }
    total += b + (g.spec.dyn_merge ? 1 : 0);  // merge: the summary block, held from the first allocation
  }
  return total;
}

int64_t KvLayout::blocks_held_after(int64_t n) const {
  int64_t total = 0;
  for (const KvGroup& g : groups) {
    // Live: the blocks the next query (at position n) reads — for a window, those holding a sink or not wholly
    // before its window.
    const auto table = make_group_table(g.spec, block_size_tokens);
    const int64_t all = table->table_blocks(n);
    for (int64_t b = 0; b < all; ++b) total += table->needed(b, n);
  }
  return total;
}

}  // namespace slimkv
