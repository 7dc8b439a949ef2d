// The LoRA adapters a server serves, by name (vLLM's convention: a request's `model` names one): loaded at start
// (--lora NAME=PATH) or at run time (POST /v1/load_lora_adapter), unloaded by name. Thread-safe; an unloaded
// adapter stays alive for the requests that hold it (shared_ptr) and is gone for new ones (404).
// Must not know: HTTP or the engine.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "model/lora_adapter.h"

namespace slimkv {

class LoraRegistry {
 public:
  LoraRegistry(const Model& model, std::string base_name) : model_(model), base_name_(std::move(base_name)) {}

  // Loads and adds; throws Error (a taken name, the base model's name, or the file's own problem).
  void load(const std::string& name, const std::string& path, float scale = 1.0f);
  bool unload(const std::string& name);  // false: no such adapter
  std::shared_ptr<const LoraAdapter> find(const std::string& name) const;  // null: none by that name
  std::vector<std::shared_ptr<const LoraAdapter>> list() const;            // by name

 private:
  const Model& model_;
  const std::string base_name_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const LoraAdapter>> by_name_;
};

// "NAME=PATH" (--lora) split; throws Error naming the flag when either side is empty.
std::pair<std::string, std::string> parse_lora_flag(const std::string& s);

}  // namespace slimkv
