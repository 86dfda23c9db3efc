#include "fake_gateway/webhook_sender.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace fake_gateway {
namespace {

using SteadyClock = std::chrono::steady_clock;

std::set<std::string> ReadDelivered(const std::filesystem::path& file) {
  std::set<std::string> ids;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) ids.insert(line);
  }
  return ids;
}

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string StripeSignature(std::string_view secret, std::string_view payload, int64_t timestamp) {
  const std::string t = std::to_string(timestamp);
  const std::string text = t + "." + std::string(payload);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac, &len);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "t=" + t + ",v1=";
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kDigits[mac[i] >> 4]);
    out.push_back(kDigits[mac[i] & 15]);
  }
  return out;
}

std::unique_ptr<WebhookSender> WebhookSender::Start(WebhookSenderOptions options, std::string* error) {
  HttpUrl url;
  if (!ParseHttpUrl(options.url, &url)) {
    *error = "webhook URL must look like http://host:port/path, got '" + options.url + "'";
    return nullptr;
  }
  if (options.secret.empty()) {
    *error = "a webhook URL needs a signing secret (FAKE_GATEWAY_WEBHOOK_SECRET)";
    return nullptr;
  }
  int fd = -1;
  std::set<std::string> delivered;
  if (!options.delivered_file.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.delivered_file.parent_path(), ec);
    delivered = ReadDelivered(options.delivered_file);
    fd = ::open(options.delivered_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
      *error = "open " + options.delivered_file.string() + ": " + std::strerror(errno);
      return nullptr;
    }
  }
  std::unique_ptr<WebhookSender> sender(
      new WebhookSender(std::move(options), std::move(url), fd, std::move(delivered)));
  for (int i = 0; i < std::max(1, sender->options_.deliveries); ++i) {
    sender->threads_.emplace_back([s = sender.get()] { s->Loop(); });
  }
  return sender;
}

WebhookSender::WebhookSender(WebhookSenderOptions options, HttpUrl url, int delivered_fd,
                             std::set<std::string> delivered)
    : options_(std::move(options)),
      url_(std::move(url)),
      delivered_fd_(delivered_fd),
      known_(std::move(delivered)),
      dice_(options_.seed) {}

WebhookSender::~WebhookSender() {
  Stop();
  if (delivered_fd_ >= 0) ::close(delivered_fd_);
}

void WebhookSender::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void WebhookSender::Enqueue(const WebhookEvent& event) {
  {
    std::lock_guard lock(mu_);
    if (!known_.insert(event.id).second) return;
    pending_.emplace(event.id, Pending{event});
    schedule_.emplace(SteadyClock::now(), event.id);
  }
  wake_.notify_all();
}

WebhookSender::Stats WebhookSender::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.pending = pending_.size();
  return s;
}

bool WebhookSender::Roll(double rate) {
  return rate > 0 && std::uniform_real_distribution<double>(0.0, 1.0)(dice_) < rate;
}

WebhookSender::Schedule::iterator WebhookSender::PickDue(TimePoint now) {
  if (schedule_.empty() || schedule_.begin()->first > now) return schedule_.end();
  if (!Roll(options_.reorder_rate)) return schedule_.begin();
  std::size_t due = 0;
  for (auto it = schedule_.begin(); it != schedule_.end() && it->first <= now && due < kReorderWindow; ++it) ++due;
  return std::next(schedule_.begin(), static_cast<long>(std::uniform_int_distribution<std::size_t>(0, due - 1)(dice_)));
}

void WebhookSender::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    const auto picked = PickDue(SteadyClock::now());
    if (picked == schedule_.end()) {
      if (schedule_.empty()) {
        wake_.wait(lock);
      } else {
        const TimePoint first_due = schedule_.begin()->first;  // a copy: the entry may go meanwhile
        wake_.wait_until(lock, first_due);
      }
      continue;
    }
    const std::string id = picked->second;
    schedule_.erase(picked);
    const std::string payload = pending_.at(id).event.payload;
    ++stats_.attempts;
    lock.unlock();
    const std::vector<std::pair<std::string, std::string>> headers = {
        {"Content-Type", "application/json"},
        {"Stripe-Signature", StripeSignature(options_.secret, payload, UnixNow())}};
    const PostResult result = HttpPost(url_, headers, payload, options_.timeout);
    lock.lock();
    Settle(id, result.status >= 200 && result.status < 300);
  }
}

void WebhookSender::Settle(const std::string& id, bool acknowledged) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending& p = it->second;
  if (!acknowledged) {
    const int shift = std::min(p.failures++, 16);
    const std::chrono::milliseconds backoff =
        std::min(options_.max_backoff, std::chrono::milliseconds(options_.first_backoff.count() << shift));
    schedule_.emplace(SteadyClock::now() + backoff, id);
    wake_.notify_one();
    return;
  }
  if (!p.acknowledged_once) {
    ++stats_.delivered;
    if (Roll(options_.duplicate_rate)) {
      p.acknowledged_once = true;  // once more, as a duplicate
      schedule_.emplace(SteadyClock::now(), id);
      return;
    }
  }
  if (delivered_fd_ >= 0) {
    const std::string line = id + "\n";
    if (::write(delivered_fd_, line.data(), line.size()) < 0) {
      // Forgetting is safe: the event is only delivered again after a restart.
    }
  }
  pending_.erase(it);
}

}  // namespace fake_gateway
