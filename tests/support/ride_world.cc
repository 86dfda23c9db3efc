#include "support/ride_world.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <pqxx/pqxx>
#include <random>
#include <set>
#include <stdexcept>

namespace phasekey::testing {
namespace {

using std::chrono::milliseconds;

// Users the load books for: never 13, whose card the gateway declines.
int UserOfClient(int index) { return 20 + index % 80; }

std::string Join(const pqxx::row& row) {
  std::string out;
  for (const auto& f : row) out += (out.empty() ? "" : "|") + std::string(f.is_null() ? "<null>" : f.c_str());
  return out;
}

}  // namespace

RideWorld::RideWorld(RideWorldOptions options) : options_(std::move(options)) {
  std::random_device rd;
  gateway_dir_ =
      (std::filesystem::temp_directory_path() / ("pk-world-" + std::to_string(::getpid()) + "-" + std::to_string(rd())))
          .string();
  if (!options_.log_dir.empty()) std::filesystem::create_directories(options_.log_dir);
  gateway_port_ = options_.gateway_port;
  StartGateway();
}

RideWorld::~RideWorld() {
  gateway_.reset();
  std::error_code ignored;
  std::filesystem::remove_all(gateway_dir_, ignored);
}

void RideWorld::StartGateway() {
  std::vector<std::string> args = {FAKE_GATEWAY_PATH, "--listen",   "127.0.0.1:" + std::to_string(gateway_port_),
                                   "--data-dir",      gateway_dir_, "--dialect",
                                   options_.provider};
  args.insert(args.end(), options_.gateway_args.begin(), options_.gateway_args.end());
  std::vector<std::string> env = {"FAKE_GATEWAY_SECRET=" + options_.provider_secret};
  env.insert(env.end(), options_.gateway_env.begin(), options_.gateway_env.end());
  gateway_ = std::make_unique<ChildProcess>(args, env, LogPath("gateway"));
  const std::uint16_t port = gateway_->WaitForListeningPort();
  if (port == 0 || (gateway_port_ != 0 && port != gateway_port_)) {
    throw std::runtime_error("the fake gateway did not start on 127.0.0.1:" + std::to_string(gateway_port_));
  }
  gateway_port_ = port;
}

int RideWorld::StopGateway() {
  gateway_->Signal(SIGTERM);
  return gateway_->Wait();
}

std::string RideWorld::LogPath(const std::string& name) const {
  return options_.log_dir.empty() ? "" : options_.log_dir + "/" + name + ".log";
}

std::string RideWorld::LogPath(const RideProcessOptions& process, const std::string& default_name) const {
  if (!process.log_path.empty()) return process.log_path;
  return LogPath(process.name.empty() ? default_name : process.name);
}

std::vector<std::string> RideWorld::Args(const std::string& command, const RideProcessOptions& process) const {
  const int lease = process.lease_seconds != 0 ? process.lease_seconds : options_.lease_seconds;
  const int charge_timeout = process.charge_timeout_ms != 0 ? process.charge_timeout_ms : options_.charge_timeout_ms;
  std::vector<std::string> args = {
      RIDE_BOOKING_PATH,
      command,
      "--database-url",
      options_.database_url,
      "--gateway-url",
      (options_.gateway_tls ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(gateway_port_),
      "--provider",
      options_.provider};
  if (lease != 0) args.insert(args.end(), {"--lease-seconds", std::to_string(lease)});
  if (charge_timeout != 0) args.insert(args.end(), {"--charge-timeout-ms", std::to_string(charge_timeout)});
  if (options_.lookup_window_ms >= 0) {
    args.insert(args.end(), {"--lookup-window-ms", std::to_string(options_.lookup_window_ms)});
  }
  args.insert(args.end(), process.args.begin(), process.args.end());
  return args;
}

std::vector<std::string> RideWorld::Environment(const RideProcessOptions& process) const {
  std::vector<std::string> env = {"RIDE_BOOKING_PROVIDER_SECRET=" + options_.provider_secret};
  env.insert(env.end(), process.env.begin(), process.env.end());
  return env;
}

std::unique_ptr<ChildProcess> RideWorld::StartService(std::uint16_t* port, const RideProcessOptions& process) {
  auto args = Args("serve", process);
  args.insert(args.end(), {"--listen", "127.0.0.1:" + std::to_string(process.port)});
  auto p = std::make_unique<ChildProcess>(args, Environment(process), LogPath(process, "service"));
  *port = p->WaitForListeningPort();
  return p;
}

std::unique_ptr<ChildProcess> RideWorld::StartWorker(const RideProcessOptions& process) {
  auto args = Args("worker", process);
  args.insert(args.end(), {"--poll-ms", "100"});
  return std::make_unique<ChildProcess>(args, Environment(process), LogPath(process, "worker"));
}

HttpResult RideWorld::PostRide(std::uint16_t port, int user, const std::string& key, const std::string& body,
                               milliseconds timeout) const {
  return HttpCall(port, "POST", "/rides",
                  {{"Authorization", "Bearer tok_user_" + std::to_string(user)},
                   {"Idempotency-Key", key},
                   {"Content-Type", "application/json"}},
                  body, timeout);
}

bool RideWorld::SetGatewayFaults(const nlohmann::json& faults) const {
  return HttpCall(gateway_port_, "POST", "/_faults", {{"Content-Type", "application/json"}}, faults.dump()).status ==
         200;
}

nlohmann::json RideWorld::Ledger() const {
  HttpResult r = HttpCall(gateway_port_, "GET", "/_ledger", {}, "");
  if (!r.ok || r.status != 200) throw std::runtime_error("GET /_ledger failed: " + r.error);
  return nlohmann::json::parse(r.body);
}

std::string RideWorld::Value(const std::string& sql) const {
  pqxx::connection conn(options_.database_url);
  pqxx::nontransaction tx(conn);
  auto f = tx.exec1(sql)[0];
  return f.is_null() ? "<null>" : f.as<std::string>();
}

std::vector<std::string> RideWorld::Rows(const std::string& sql) const {
  pqxx::connection conn(options_.database_url);
  pqxx::nontransaction tx(conn);
  std::vector<std::string> out;
  for (const auto& row : tx.exec(sql)) out.push_back(Join(row));
  return out;
}

RideLoad::RideLoad(const RideWorld* world, std::uint16_t port, int clients, std::string key_prefix)
    : world_(world), port_(port), clients_(clients), prefix_(std::move(key_prefix)) {}

RideLoad::~RideLoad() { Stop(milliseconds(0)); }

void RideLoad::Start() {
  for (int i = 0; i < clients_; ++i) threads_.emplace_back([this, i] { Client(i); });
}

void RideLoad::Stop(milliseconds converge) {
  if (threads_.empty()) return;
  give_up_at_ = std::chrono::steady_clock::now() + converge;
  give_up_armed_ = true;
  stopping_ = true;
  for (auto& t : threads_) t.join();
  threads_.clear();
}

milliseconds RideLoad::longest_answer() const {
  std::lock_guard lock(mu_);
  return longest_;
}

std::map<int, int> RideLoad::statuses() const {
  std::lock_guard lock(mu_);
  return statuses_;
}

void RideLoad::Client(int index) {
  const int user = UserOfClient(index);
  for (int n = 0; !stopping_; ++n) {
    const std::string key = prefix_ + "-" + std::to_string(index) + "-" + std::to_string(n);
    {
      std::lock_guard lock(mu_);
      keys_.push_back(key);
    }
    while (true) {
      const auto sent = std::chrono::steady_clock::now();
      HttpResult r = world_->PostRide(port_, user, key);
      const auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - sent);
      const int status = r.ok ? r.status : 0;
      {
        std::lock_guard lock(mu_);
        ++statuses_[status];
        longest_ = std::max(longest_, took);
      }
      if (status == 201) {
        Booking b{user, key, 0, ""};
        const auto body = nlohmann::json::parse(r.body, nullptr, false);
        if (body.is_object() && body.contains("ride_id") && body.contains("charge_id")) {
          b.ride_id = body["ride_id"].get<long long>();
          b.charge_id = body["charge_id"].get<std::string>();
        }
        std::lock_guard lock(mu_);
        bookings_.push_back(b);
        break;
      }
      if (status != 0 && status != 409 && status != 503) {
        std::lock_guard lock(mu_);
        unexpected_.push_back(key + ": " + std::to_string(status) + " " + r.body);
        break;
      }
      if (status == 0) {
        std::lock_guard lock(mu_);
        unexpected_.push_back(key + ": no answer (" + r.error + ")");
      }
      if (give_up_armed_ && std::chrono::steady_clock::now() > give_up_at_) {
        std::lock_guard lock(mu_);
        abandoned_.push_back(key);
        break;
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
  }
}

std::string CheckNothingLostNothingTwice(const RideWorld& world, const RideLoad& load) {
  std::string problems;
  auto fail = [&](const std::string& what) { problems += what + "\n"; };
  // rides: id -> user|key|charge
  std::map<long long, std::vector<std::string>> rides;
  std::map<std::string, int> rides_per_key;
  for (const auto& row : world.Rows("SELECT id, user_id, idempotency_key, charge_id FROM rides")) {
    std::vector<std::string> cols;
    std::size_t start = 0;
    for (std::size_t bar; (bar = row.find('|', start)) != std::string::npos; start = bar + 1) {
      cols.push_back(row.substr(start, bar - start));
    }
    cols.push_back(row.substr(start));
    rides[std::stoll(cols[0])] = cols;
    ++rides_per_key[cols[1] + "|" + cols[2]];
  }
  const nlohmann::json ledger = world.Ledger();
  std::set<std::string> charges, provider_keys;
  for (const auto& c : ledger) {
    charges.insert(c["id"].get<std::string>());
    if (!provider_keys.insert(c["idempotency_key"].get<std::string>()).second) {
      fail("provider key charged twice: " + c["idempotency_key"].get<std::string>());
    }
  }
  for (const Booking& b : load.bookings()) {
    auto it = rides.find(b.ride_id);
    if (it == rides.end()) {
      fail("acknowledged ride lost: key " + b.key + " ride " + std::to_string(b.ride_id));
      continue;
    }
    if (it->second[1] != std::to_string(b.user) || it->second[2] != b.key || it->second[3] != b.charge_id) {
      fail("acknowledged ride differs: key " + b.key);
    }
    if (charges.count(b.charge_id) == 0) fail("acknowledged charge missing from the ledger: " + b.charge_id);
  }
  std::size_t charged_rides = 0;
  for (const auto& [id, cols] : rides) {
    if (cols[3] == "<null>") continue;
    ++charged_rides;
    if (charges.count(cols[3]) == 0) fail("ride " + std::to_string(id) + " names a charge the ledger lacks");
  }
  if (charged_rides != ledger.size()) {
    fail(std::to_string(ledger.size()) + " charges in the ledger for " + std::to_string(charged_rides) +
         " charged rides");
  }
  for (const auto& [user_key, n] : rides_per_key) {
    if (n != 1) fail(std::to_string(n) + " rides for " + user_key);
  }
  for (const std::string& key : load.keys()) {
    bool found = false;
    for (const auto& [user_key, n] : rides_per_key) found = found || user_key.ends_with("|" + key);
    if (!found) fail("no ride for key " + key);
  }
  const std::string unfinished =
      world.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state <> 'finished'");
  if (unfinished != "0") fail(unfinished + " keys not finished");
  const std::string locked =
      world.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE owner_token IS NOT NULL");
  if (locked != "0") fail(locked + " keys left locked");
  const std::string keys = world.Value("SELECT count(*) FROM phasekey.idempotency_keys");
  if (keys != std::to_string(load.keys().size())) {
    fail(keys + " key rows for " + std::to_string(load.keys().size()) + " keys sent");
  }
  for (const std::string& key : load.abandoned()) fail("a client gave up on key " + key);
  return problems;
}

bool WaitUntilAllKeysFinished(const RideWorld& world, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    try {
      if (world.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state <> 'finished'") == "0") {
        return true;
      }
    } catch (const std::exception&) {
      // the database may still be coming back
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(100));
  }
}

std::uint16_t FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  std::uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

}  // namespace phasekey::testing
