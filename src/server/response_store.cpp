#include "server/response_store.h"

namespace slimkv {

void ResponseStore::expire(Clock::time_point now) {
  while (!order_.empty() &&
         (static_cast<int32_t>(order_.size()) > max_ ||
          std::chrono::duration<double>(now - order_.front().at).count() > ttl_s_)) {
    by_id_.erase(order_.front().id);
    order_.pop_front();
  }
}

void ResponseStore::put(const std::string& id, nlohmann::ordered_json messages) {
  if (max_ <= 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = by_id_.find(id); it != by_id_.end()) {
    order_.erase(it->second);
    by_id_.erase(it);
  }
  order_.push_back({id, std::move(messages), Clock::now()});
  by_id_[id] = std::prev(order_.end());
  expire(Clock::now());
}

std::optional<nlohmann::ordered_json> ResponseStore::get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  expire(Clock::now());
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second->messages;
}

}  // namespace slimkv
