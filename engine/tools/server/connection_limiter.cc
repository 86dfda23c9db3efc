#include "server/connection_limiter.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace phasekey {

ConnectionLimiter::ConnectionLimiter(std::size_t max_total, std::size_t max_per_address)
    : max_total_(std::max<std::size_t>(max_total, 1)), max_per_address_(max_per_address) {}

std::uint64_t ConnectionLimiter::Admit(const std::string& address) {
  Close victim;
  std::uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::optional<std::uint64_t> evict;
    auto a = addresses_.find(address);
    if (max_per_address_ > 0 && a != addresses_.end() && a->second.open >= max_per_address_) {
      if (a->second.waiting.empty()) return 0;
      evict = a->second.waiting.begin()->second;
    } else if (connections_.size() >= max_total_) {
      if (waiting_.empty()) return 0;
      evict = waiting_.begin()->second;
    }
    if (evict) victim = Remove(*evict);
    id = next_id_++;
    connections_[id].address = address;
    ++addresses_[address].open;
  }
  if (victim) victim();
  return id;
}

bool ConnectionLimiter::Waiting(std::uint64_t id, Close close) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = connections_.find(id);
  if (it == connections_.end()) return false;
  Connection& c = it->second;
  StopWaiting(id, c);
  c.waiting_since = next_wait_++;
  c.close = std::move(close);
  waiting_[c.waiting_since] = id;
  addresses_[c.address].waiting[c.waiting_since] = id;
  return true;
}

bool ConnectionLimiter::Busy(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = connections_.find(id);
  if (it == connections_.end()) return false;
  StopWaiting(id, it->second);
  return true;
}

void ConnectionLimiter::Release(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  Remove(id);  // the connection is closed already: its Close is not called
}

std::size_t ConnectionLimiter::open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return connections_.size();
}

void ConnectionLimiter::StopWaiting(std::uint64_t, Connection& c) {
  if (c.waiting_since == 0) return;
  waiting_.erase(c.waiting_since);
  addresses_[c.address].waiting.erase(c.waiting_since);
  c.waiting_since = 0;
  c.close = nullptr;
}

ConnectionLimiter::Close ConnectionLimiter::Remove(std::uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return nullptr;
  Close close = std::move(it->second.close);
  StopWaiting(id, it->second);
  auto a = addresses_.find(it->second.address);
  if (a != addresses_.end() && --a->second.open == 0) addresses_.erase(a);
  connections_.erase(it);
  return close;
}

}  // namespace phasekey
