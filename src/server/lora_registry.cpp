#include "server/lora_registry.h"

#include "core/check.h"

namespace slimkv {

void LoraRegistry::load(const std::string& name, const std::string& path, float scale) {
  SLIMKV_CHECK(!name.empty() && name.size() <= 256, "a LoRA adapter's name must have 1 to 256 characters");
  SLIMKV_CHECK(name != base_name_, "the LoRA adapter name '{}' is the base model's", name);
  {
    std::lock_guard lock(mu_);
    SLIMKV_CHECK(!by_name_.count(name), "a LoRA adapter named '{}' is already loaded", name);
  }
  auto adapter = load_lora_adapter(model_, name, path, scale);  // outside the lock: reads a file
  std::lock_guard lock(mu_);
  SLIMKV_CHECK(by_name_.emplace(name, std::move(adapter)).second, "a LoRA adapter named '{}' is already loaded", name);
}

bool LoraRegistry::unload(const std::string& name) {
  std::lock_guard lock(mu_);
  return by_name_.erase(name) > 0;
}

std::shared_ptr<const LoraAdapter> LoraRegistry::find(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const LoraAdapter>> LoraRegistry::list() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<const LoraAdapter>> out;
  for (const auto& [name, a] : by_name_) out.push_back(a);
  return out;
}

std::pair<std::string, std::string> parse_lora_flag(const std::string& s) {
  const size_t eq = s.find('=');
  SLIMKV_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < s.size(), "--lora must be NAME=PATH (got '{}')", s);
  return {s.substr(0, eq), s.substr(eq + 1)};
}

}  // namespace slimkv
