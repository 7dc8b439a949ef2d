// A typed choice among named values: an enum with its spellings (ChoiceNames<E>), parsed once where it is set —
// from a flag, a --kv-config key or code (`cfg.kv_sparse_mode = "dynamic"`) — and stored as the enum. An unknown
// spelling is an Error naming the flag and every choice.
// Must not know: what the choices mean.
#pragma once
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"

namespace slimkv {

template <class E>
struct ChoiceNames;  // specialised per enum: static constexpr const char* flag; static constexpr std::array names

template <class E>
class Choice {
 public:
  constexpr Choice(E v) : v_(v) {}  // NOLINT: an enum value is a choice
  Choice(const std::string& s) : v_(parse(s)) {}  // NOLINT: so is its spelling
  Choice(const char* s) : v_(parse(s)) {}         // NOLINT
  constexpr operator E() const { return v_; }     // NOLINT
  const char* name() const {
    for (const auto& [v, n] : ChoiceNames<E>::names) {
      if (v == v_) return n;
    }
    return "?";
  }
  static std::vector<std::string> spellings() {
    std::vector<std::string> out;
    for (const auto& [v, n] : ChoiceNames<E>::names) out.emplace_back(n);
    return out;
  }

 private:
  static E parse(const std::string& s) {
    std::string list;
    for (const auto& [v, n] : ChoiceNames<E>::names) {
      if (s == n) return v;
      list += (list.empty() ? "" : ", ") + std::string(n);
    }
    fail("{} must be one of {} (got '{}')", ChoiceNames<E>::flag, list, s);
  }
  E v_;
};

}  // namespace slimkv
