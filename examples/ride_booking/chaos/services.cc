#include "chaos/services.h"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <thread>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include "chaos/http.h"
#include "phasekey/crash_point.h"

namespace ride_booking {
namespace {

namespace fs = std::filesystem;
using phasekey::Result;
using phasekey::Status;

// How the service and the worker run in the demo. Short leases and a short
// gateway timeout let a request left behind by a SIGKILLed service be taken
// over within a few seconds, by a client's retry or by the worker.
constexpr char kChargeTimeoutMs[] = "1500";
constexpr char kWorkerPollMs[] = "200";

// How long a program may take to print its "listening on" line (the service
// migrates first; the embedded database may still be warming up).
constexpr std::chrono::seconds kListenTimeout{30};
// A restarted service may find its port still taken for a moment; it exits
// then, and is started again.
constexpr int kServiceStartTries = 20;
constexpr std::chrono::milliseconds kServiceRetryDelay{250};
// How often the soak's supervisor looks for a dead service or worker.
constexpr std::chrono::milliseconds kSupervisePoll{50};

// The ride flow's crash points (the crash matrix's, docs/reliability.md).
// The worker runs the same phases when it re-drives a key, so it can die at
// any of them too, besides its own.
const std::vector<std::string> kServicePoints = {"claim.before_commit",
                                                 "claim.after_commit",
                                                 "foreign.charge.before_call",
                                                 "foreign.sent",
                                                 "foreign.charge.after_call",
                                                 "phase.send_receipt.before_commit",
                                                 "phase.send_receipt.after_commit",
                                                 "response.before_commit",
                                                 "response.after_commit"};
const std::vector<std::string> kWorkerOnlyPoints = {"redrive.claimed", "enqueuer.delivered"};

std::string Loopback(int port) { return "127.0.0.1:" + std::to_string(port); }

Result<std::string> MakeRunDir() {
  std::string templ = (fs::temp_directory_path() / "phasekey-chaos-XXXXXX").string();
  if (::mkdtemp(templ.data()) == nullptr) return Status::FailedPrecondition("cannot create " + templ);
  return templ;
}

// A credential of a run, fresh per run from the OS's entropy: the provider
// secret (the gateway requires it, the service and the worker send it) and
// the webhook signing secret (the gateway signs, the service verifies).
std::string RandomSecret(const char* prefix) {
  std::random_device rd;
  char hex[48];
  std::snprintf(hex, sizeof hex, "%s%08x%08x%08x", prefix, rd(), rd(), rd());
  return hex;
}

// A free TCP port on 127.0.0.1 (bound and released), for the service: the
// gateway must know the webhook URL before the service starts. Another
// process may take it meanwhile; the service start then fails clearly.
Result<int> FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok) return Status::FailedPrecondition("no free loopback port for the service");
  return static_cast<int>(ntohs(addr.sin_port));
}

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// "service" or "worker" alone, else numbered from 1: "service-2".
std::string ProcessName(const char* what, int i, int of) {
  return of == 1 ? std::string(what) : std::string(what) + "-" + std::to_string(i + 1);
}

}  // namespace

std::string ChaosUtcNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char ts[64];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(ms));
  return ts;
}

// Runs tasks on one thread that lives as long as it does, so the children
// a task spawns are tied to that thread (process.h), not to the
// caller's.
class SpawnThread {
 public:
  SpawnThread() : thread_([this] { Loop(); }) {}
  ~SpawnThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  SpawnThread(const SpawnThread&) = delete;
  SpawnThread& operator=(const SpawnThread&) = delete;

  // Runs `task` there and returns its status.
  Status Run(std::function<Status()> task) {
    std::packaged_task<Status()> t(std::move(task));
    std::future<Status> result = t.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(t));
    }
    cv_.notify_all();
    return result.get();
  }

 private:
  void Loop() {
    for (;;) {
      std::packaged_task<Status()> t;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return done_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        t = std::move(tasks_.front());
        tasks_.pop_front();
      }
      t();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<Status()>> tasks_;  // GUARDED_BY(mu_)
  bool done_ = false;                               // GUARDED_BY(mu_)
  std::thread thread_;                              // last: started once the rest is ready
};

Result<std::unique_ptr<ChaosServices>> ChaosServices::Start(const ChaosServicesOptions& o) {
  if (o.crash_points && !phasekey::CrashPointsCompiledIn()) {
    return Status::InvalidArgument(
        "--crash-points needs a build with crash points (cmake -DPHASEKEY_CRASH_POINTS=ON, as ./run.sh test and "
        "./run.sh soak build it)");
  }
  std::unique_ptr<ChaosServices> s(new ChaosServices());
  s->crash_points_ = o.crash_points;
  s->crash_every_ = std::max(1, o.crash_every);
  std::seed_seq crash_seed{o.seed, 5u};
  s->crash_rng_.seed(crash_seed);
  s->provider_secret_ = RandomSecret("sk_chaos_");
  s->webhook_secret_ = RandomSecret("whsec_chaos_");
  if (Status st = s->FindBinaries(o.bin_dir); !st.ok()) return st;
  auto dir = MakeRunDir();
  if (!dir) return dir.error();
  s->run_dir_ = *dir;
  Status st = s->StartDatabase(o);
  if (st.ok()) st = s->PrepareFakeClock(o.fake_clock);
  s->provider_ = o.provider;
  s->prepared_statements_ = o.prepared_statements;
  s->session_url_ = o.session_url;
  s->kek_file_ = o.kek_file;
  s->gateway_ca_ = o.gateway_ca;
  s->on_fault_ = o.on_fault;
  s->spawner_ = std::make_unique<SpawnThread>();
  for (int i = 0; i < o.workers; ++i) {
    const std::string name = ProcessName("worker", i, o.workers);
    s->processes_.push_back({name, s->run_dir_ + "/" + name + ".log", false, 0, {}});
  }
  if (st.ok()) st = s->PlanServices(std::max(1, o.services));
  if (st.ok()) st = s->StartGateway(o);
  if (st.ok()) {
    std::lock_guard<std::mutex> lock(s->mu_);
    for (std::size_t i = 0; i < s->slots_.size() && st.ok(); ++i) st = s->StartSlot(i);
  }
  if (!st.ok()) {
    s->KeepRunDir();
    return Status::FailedPrecondition(st.message() + " (logs in " + s->run_dir_ + ")");
  }
  if (o.crash_points) s->supervisor_ = std::thread([p = s.get()] { p->Supervise(); });
  return s;
}

ChaosServices::~ChaosServices() {
  stop_supervisor_ = true;
  if (supervisor_.joinable()) supervisor_.join();
  if (link_cut_.exchange(false)) (void)PartitionRules(false);
  StopServices();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Slot& slot : slots_) {
      if (slot.child) slot.child->Stop();
    }
  }
  spawner_.reset();
  balancer_.reset();
  if (gateway_) gateway_->Stop();
  if (embedded_) (void)embedded_->Stop();
  if (!run_dir_.empty() && !keep_run_dir_) {
    std::error_code ec;
    fs::remove_all(run_dir_, ec);
  }
}

Status ChaosServices::FindBinaries(const std::string& bin_dir) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const fs::path dir = bin_dir.empty() ? self.parent_path() : fs::path(bin_dir);
  ride_booking_path_ = (dir / "ride_booking").string();
  if (!IsFile(ride_booking_path_) && bin_dir.empty()) ride_booking_path_ = self.string();
  if (!IsFile(ride_booking_path_)) return Status::InvalidArgument("no ride_booking in " + dir.string());
  // The build tree keeps it in a subdirectory of its own; an install, beside us.
  for (const fs::path& p : {dir / "fake_gateway" / "fake_gateway", dir / "fake_gateway"}) {
    if (IsFile(p)) {
      fake_gateway_path_ = p.string();
      return Status::OK();
    }
  }
  return Status::InvalidArgument("no fake_gateway in " + dir.string() + " or " + (dir / "fake_gateway").string() +
                                 " (build the fake_gateway target, or pass --bin-dir)");
}

Status ChaosServices::StartDatabase(const ChaosServicesOptions& o) {
  if (!o.database_url.empty()) {
    database_url_ = o.database_url;
    return Status::OK();
  }
  if (const char* env = std::getenv("DATABASE_URL"); env != nullptr && *env != '\0') {
    database_url_ = env;
    return Status::OK();
  }
  phasekey::EmbeddedPostgresOptions eo;
  eo.base_dir = o.pg_dir;
  auto server = phasekey::EmbeddedPostgres::Start(eo);
  if (!server) return Status::FailedPrecondition("embedded PostgreSQL: " + server.error().ToString());
  embedded_ = std::move(*server);
  database_url_ = embedded_->url();
  pg_dir_ = o.pg_dir;
  pg_port_ = embedded_->port();
  std::fprintf(stderr, "chaos: embedded PostgreSQL at %s (in %s)\n", embedded_->display_url().c_str(),
               o.pg_dir.c_str());
  return Status::OK();
}

Status ChaosServices::StartGateway(const ChaosServicesOptions& o) {
  std::vector<std::string> argv = {fake_gateway_path_,
                                   "--listen",
                                   Loopback(0),
                                   "--data-dir",
                                   run_dir_ + "/gateway",
                                   "--fail-rate",
                                   std::to_string(o.fail_rate),
                                   "--drop-response-rate",
                                   std::to_string(o.drop_response_rate),
                                   "--latency-ms",
                                   std::to_string(o.latency_ms),
                                   "--seed",
                                   std::to_string(o.seed),
                                   "--dialect",
                                   o.provider,
                                   "--webhook-url",
                                   "http://" + Loopback(entry_port_) + "/webhooks/gateway"};
  if (!o.gateway_cert.empty()) argv.insert(argv.end(), {"--tls-cert", o.gateway_cert, "--tls-key", o.gateway_key});
  auto child = ChildProcess::Spawn(
      argv, run_dir_ + "/gateway.log",
      {"FAKE_GATEWAY_SECRET=" + provider_secret_, "FAKE_GATEWAY_WEBHOOK_SECRET=" + webhook_secret_});
  if (!child) return child.error();
  auto port = (*child)->WaitListening(kListenTimeout);
  if (!port) return Status::FailedPrecondition("fake_gateway: " + port.error().message());
  gateway_port_ = *port;
  std::fprintf(stderr, "chaos: fake_gateway (%s) at %s\n", o.provider.c_str(), GatewayUrl().c_str());
  gateway_ = std::move(*child);
  return Status::OK();
}

Status ChaosServices::PlanServices(int services) {
  std::vector<Slot> slots(static_cast<std::size_t>(services));
  std::vector<ChaosProcess> named;
  std::vector<int> ports;
  for (int i = 0; i < services; ++i) {
    auto port = FreeLoopbackPort();
    if (!port) return port.error();
    slots[static_cast<std::size_t>(i)].port = *port;
    ports.push_back(*port);
    const std::string name = ProcessName("service", i, services);
    named.push_back({name, run_dir_ + "/" + name + ".log", true, 0, {}});
  }
  entry_port_ = ports[0];
  if (services > 1) {
    auto balancer = ChaosBalancer::Start(ports);
    if (!balancer) return balancer.error();
    balancer_ = std::move(*balancer);
    entry_port_ = balancer_->port();
  }
  std::lock_guard<std::mutex> lock(mu_);
  processes_.insert(processes_.begin(), named.begin(), named.end());
  slots_.insert(slots_.begin(), std::make_move_iterator(slots.begin()), std::make_move_iterator(slots.end()));
  slots_.resize(processes_.size());
  return Status::OK();
}

Status ChaosServices::StartSlot(std::size_t i) { return processes_[i].service ? StartService(i) : StartWorker(i); }

std::vector<std::string> ChaosServices::CommonFlags() const {
  // The database URLs carry the run's password: they go in the environment
  // (ChildEnvironment), which only this user can read, not on the command
  // line, which every user on the host can.
  std::vector<std::string> flags = {
      "--gateway-url",       GatewayUrl(),     "--lease-seconds", std::to_string(kChaosLeaseSeconds),
      "--charge-timeout-ms", kChargeTimeoutMs, "--provider",      provider_};
  // The chaos gateway's lookups do not lag (no --lookup-lag-ms): a lookup's
  // "not found" is the truth at once, so keyless providers need not wait out
  // their adapter's default window (up to an hour) after a lost answer.
  flags.insert(flags.end(), {"--lookup-window-ms", "0"});
  if (!prepared_statements_) flags.push_back("--no-prepared-statements");
  if (!kek_file_.empty()) flags.insert(flags.end(), {"--kek-file", kek_file_});
  if (!gateway_ca_.empty()) flags.insert(flags.end(), {"--provider-ca-file", gateway_ca_});
  return flags;
}

std::string ChaosServices::GatewayUrl() const {
  return (gateway_ca_.empty() ? "http://" : "https://") + Loopback(gateway_port_);
}

Status ChaosServices::StartService(std::size_t i) {
  Slot& slot = slots_[i];
  std::vector<std::string> argv = {ride_booking_path_, "serve", "--listen", Loopback(slot.port)};
  for (std::string& f : CommonFlags()) argv.push_back(std::move(f));
  const std::vector<std::string> env = ChildEnvironment(false, &slot.armed);
  Status last = Status::OK();
  for (int attempt = 0; attempt < kServiceStartTries; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(kServiceRetryDelay);
    auto child = ChildProcess::Spawn(argv, processes_[i].log_path, env);
    if (!child) return child.error();
    auto listening = (*child)->WaitListening(kListenTimeout);
    if (listening) {
      slot.child = std::move(*child);
      return Status::OK();
    }
    (*child)->Kill();
    last = listening.error();
    if (last.IsDeadlineExceeded()) break;  // hung rather than refused: do not wait 30 s again
  }
  return Status::FailedPrecondition("ride_booking serve (" + processes_[i].name + "): " + last.message());
}

Status ChaosServices::StartWorker(std::size_t i) {
  Slot& slot = slots_[i];
  std::vector<std::string> argv = {ride_booking_path_, "worker", "--poll-ms", kWorkerPollMs};
  for (std::string& f : CommonFlags()) argv.push_back(std::move(f));
  const std::vector<std::string> env = ChildEnvironment(true, &slot.armed);
  auto child = ChildProcess::Spawn(argv, processes_[i].log_path, env);
  if (!child) return child.error();
  slot.child = std::move(*child);
  return Status::OK();
}

std::vector<std::string> ChaosServices::ChildEnvironment(bool worker, std::string* armed) {
  armed->clear();
  std::vector<std::string> env = {"DATABASE_URL=" + database_url_, "RIDE_BOOKING_PROVIDER_SECRET=" + provider_secret_,
                                  "RIDE_BOOKING_WEBHOOK_SECRET=" + webhook_secret_};
  if (!session_url_.empty()) env.push_back("RIDE_BOOKING_SESSION_URL=" + session_url_);
  for (std::string& e : FakeClockEnvironment()) env.push_back(std::move(e));
  if (!crash_points_) return env;
  std::vector<std::string> points = kServicePoints;
  if (worker) points.insert(points.end(), kWorkerOnlyPoints.begin(), kWorkerOnlyPoints.end());
  std::uniform_int_distribution<std::size_t> which(0, points.size() - 1);
  std::uniform_int_distribution<int> hit(1, crash_every_);
  const std::size_t i = which(crash_rng_);
  *armed = points[i] + "@" + std::to_string(hit(crash_rng_));
  env.push_back("PHASEKEY_CRASH_AT=" + *armed);
  return env;
}

void ChaosServices::Supervise() {
  while (!stop_supervisor_.load()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      (void)ReviveDead();
    }
    std::this_thread::sleep_for(kSupervisePoll);
  }
}

bool ChaosServices::ReviveDead() {
  bool ok = true;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    const bool stopped = processes_[i].service && services_stopped_;
    int code = 0;
    if (slot.child && !stopped && slot.child->Exited(&code)) {
      deaths_.push_back({processes_[i].name, slot.armed, code});
      if (on_fault_)
        on_fault_("died", processes_[i].name, "exit code " + std::to_string(code) + " armed " + slot.armed);
      slot.child.reset();
    }
    if (slot.child || stopped) continue;
    Status s = StartSlot(i);
    if (s.ok() && on_fault_) on_fault_("restart", processes_[i].name, slot.armed);
    if (!s.ok()) {
      std::fprintf(stderr, "chaos: the %s did not start again: %s\n", processes_[i].name.c_str(), s.ToString().c_str());
      ok = false;
    }
  }
  return ok;
}

void ChaosServices::DisarmCrashPoints() {
  std::lock_guard<std::mutex> lock(mu_);
  crash_points_ = false;
}

std::vector<CrashDeath> ChaosServices::crash_deaths() const {
  std::lock_guard<std::mutex> lock(mu_);
  return deaths_;
}

Status ChaosServices::OnSpawnThread(std::function<Status()> task) { return spawner_->Run(std::move(task)); }

Status ChaosServices::KillAndRestart(int i) {
  std::lock_guard<std::mutex> lock(mu_);
  if (i < 0 || static_cast<std::size_t>(i) >= slots_.size()) return Status::InvalidArgument("no such process");
  const std::size_t at = static_cast<std::size_t>(i);
  if (processes_[at].service && services_stopped_) return Status::FailedPrecondition("the services were stopped");
  ++processes_[at].kills;
  processes_[at].kill_times.push_back(ChaosUtcNow());  // before: what it held when this was stamped dies
  if (on_fault_) on_fault_("kill", processes_[at].name, "SIGKILL");
  if (slots_[at].child) slots_[at].child->Kill();
  slots_[at].child.reset();
  Status started = spawner_->Run([this, at] { return StartSlot(at); });  // mu_ stays held by us meanwhile
  if (started.ok() && on_fault_) on_fault_("restart", processes_[at].name, slots_[at].armed);
  return started;
}

void ChaosServices::StopServices() {
  std::lock_guard<std::mutex> lock(mu_);
  services_stopped_ = true;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!processes_[i].service || !slots_[i].child) continue;
    slots_[i].child->Stop();
    slots_[i].child.reset();
  }
}

std::vector<ChaosProcess> ChaosServices::processes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return processes_;
}

Result<std::string> ChaosServices::Ledger() const {
  ChaosHttpRequest req;
  req.target = "/_ledger";
  auto res = HttpExchange("127.0.0.1", gateway_port_, req, std::chrono::seconds(30), gateway_ca_);
  if (!res) return Status::FailedPrecondition("GET /_ledger: " + res.error().message());
  if (res->status != 200) return Status::FailedPrecondition("GET /_ledger answered " + std::to_string(res->status));
  return res->body;
}

}  // namespace ride_booking
