// Scope: one level of variables (the render context, a loop iteration, a macro call, a with / set / filter block),
// chained to the scope it was opened in; lookups walk outwards, assignments stay in the scope they are made in — the
// effect jinja2's compiled frames have (a set inside a loop or macro is not seen after it).
// Must not know: expressions or statements.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace slimkv::jinja {

class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent = nullptr) : parent_(std::move(parent)) {}

  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent_.get()) {
      for (const auto& [k, v] : s->vars_) {
        if (k == name) return &v;
      }
    }
    return nullptr;
  }

  // Drops the variables of this scope and all its parents: breaks the reference cycles a macro makes (its value
  // lives in the scope its closure points to) once a render is over.
  void clear_chain() {
    std::vector<std::shared_ptr<Scope>> keep;  // parents stay alive until the walk is done
    for (Scope* s = this; s;) {
      s->vars_.clear();
      keep.push_back(std::move(s->parent_));
      s = keep.back().get();
    }
  }

  void set(const std::string& name, Value v) {
    for (auto& [k, old] : vars_) {
      if (k == name) {
        old = std::move(v);
        return;
      }
    }
    vars_.emplace_back(name, std::move(v));
  }

 private:
  std::vector<std::pair<std::string, Value>> vars_;
  std::shared_ptr<Scope> parent_;
};

using ScopePtr = std::shared_ptr<Scope>;

}  // namespace slimkv::jinja
