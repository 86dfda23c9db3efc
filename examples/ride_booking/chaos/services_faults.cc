// ChaosServices' nemeses (services.h, nemesis.h): pause, database restart,
// partition and clock jump. Kills are in services.cc, beside the restarts.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "chaos/services.h"

namespace ride_booking {
namespace {

namespace fs = std::filesystem;
using phasekey::Status;

// Debian's faketime package. The multi-threaded variant: the services are.
constexpr char kLibFaketime[] = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";
// Marks our iptables rules, so that what we add is what we delete.
constexpr char kRuleComment[] = "phasekey-chaos-partition";

// Writes `offset` ("+0", "+3600s") to libfaketime's file at once: a new file
// renamed over the old, so a reader never sees it half written.
Status WriteClockOffset(const std::string& file, const std::string& offset) {
  {
    std::ofstream out(file + ".new", std::ios::trunc);
    out << offset << "\n";
    if (!out.flush()) return Status::FailedPrecondition("cannot write " + file + ".new");
  }
  std::error_code ec;
  fs::rename(file + ".new", file, ec);
  if (ec) return Status::FailedPrecondition("cannot rename " + file + ".new: " + ec.message());
  return Status::OK();
}

std::string Millis(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

}  // namespace

Status ChaosServices::PrepareFakeClock(bool on) {
  fake_clock_ = on;
  if (!on) return Status::OK();
  if (!fs::exists(kLibFaketime)) {
    return Status::FailedPrecondition(std::string("the clock-jump nemesis needs ") + kLibFaketime +
                                      " (Debian package faketime; ./run.sh installs it)");
  }
  clock_file_ = run_dir_ + "/faketime";
  return WriteClockOffset(clock_file_, "+0");
}

std::vector<std::string> ChaosServices::FakeClockEnvironment() const {
  if (!fake_clock_) return {};
  // Only the wall clock moves (as when NTP steps it): timeouts and the
  // lease check's own deadlines run on the monotonic clock. The file is
  // read on every clock call. No shared memory: each process keeps its own
  // state, and a SIGKILLed one leaves nothing in /dev/shm.
  std::string asan = "verify_asan_link_order=0";  // ASan builds: libfaketime is preloaded before ASan's runtime
  if (const char* old = std::getenv("ASAN_OPTIONS"); old != nullptr && *old != '\0')
    asan = std::string(old) + ":" + asan;
  return {std::string("LD_PRELOAD=") + kLibFaketime,
          "FAKETIME_TIMESTAMP_FILE=" + clock_file_,
          "FAKETIME_NO_CACHE=1",
          "FAKETIME_DONT_FAKE_MONOTONIC=1",
          "FAKETIME_DISABLE_SHM=1",
          "ASAN_OPTIONS=" + asan};
}

Status ChaosServices::Pause(int i, std::chrono::milliseconds d) {
  pid_t pid = -1;
  std::string name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (i < 0 || static_cast<std::size_t>(i) >= slots_.size()) return Status::InvalidArgument("no such process");
    const std::size_t at = static_cast<std::size_t>(i);
    if (!slots_[at].child) return Status::OK();  // stopped for good, or being restarted: nothing to pause
    pid = slots_[at].child->pid();
    name = processes_[at].name;
    if (on_fault_) on_fault_("pause", name, "SIGSTOP for " + Millis(d));
    ::kill(pid, SIGSTOP);
  }
  std::this_thread::sleep_for(d);
  std::lock_guard<std::mutex> lock(mu_);
  const Slot& slot = slots_[static_cast<std::size_t>(i)];
  if (slot.child && slot.child->pid() == pid) ::kill(pid, SIGCONT);  // the same incarnation
  if (on_fault_) on_fault_("resume", name, "SIGCONT");
  return Status::OK();
}

Status ChaosServices::RestartDatabase() {
  if (!owns_database()) {
    return Status::FailedPrecondition("the db-restart nemesis needs the run's own PostgreSQL (no --database-url)");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (on_fault_) on_fault_("db-crash", "postgres", "SIGQUIT (immediate shutdown)");
  }
  ::kill(embedded_->pid(), SIGQUIT);
  (void)embedded_->Stop();  // reaps it; not a clean shutdown, as meant
  // Started from the spawner's thread: the server lives as long as the
  // thread that started it (embedded_postgres.h), and that one lives as long
  // as we do.
  Status started = OnSpawnThread([this] {
    phasekey::EmbeddedPostgresOptions eo;
    eo.base_dir = pg_dir_;
    eo.port = pg_port_;
    auto server = phasekey::EmbeddedPostgres::Start(eo);
    if (!server)
      return Status::FailedPrecondition("embedded PostgreSQL did not start again: " + server.error().ToString());
    embedded_ = std::move(*server);
    return Status::OK();
  });
  std::lock_guard<std::mutex> lock(mu_);
  if (started.ok() && on_fault_) on_fault_("db-start", "postgres", "port " + std::to_string(pg_port_));
  return started;
}

std::string ChaosServices::PartitionUnavailable() const {
  if (!owns_database()) {
    return "--nemesis partition needs the run's own PostgreSQL: drop --database-url (and DATABASE_URL)";
  }
  if (::geteuid() != 0) return "the partition nemesis needs root (iptables)";
  if (std::system("iptables -w -L INPUT -n >/dev/null 2>&1") != 0) {
    return "the partition nemesis needs iptables (Debian package iptables; ./run.sh installs it)";
  }
  return "";
}

bool ChaosServices::PartitionRules(bool add) const {
  bool ok = true;
  for (const char* dir : {"--dport", "--sport"}) {
    const std::string rule = std::string(add ? "-I" : "-D") + " INPUT -i lo -p tcp " + dir + " " +
                             std::to_string(pg_port_) + " -m comment --comment " + kRuleComment + " -j DROP";
    ok = std::system(("iptables -w " + rule + " >/dev/null 2>&1").c_str()) == 0 && ok;
  }
  return ok;
}

Status ChaosServices::CutDatabaseLink(std::chrono::milliseconds d) {
  if (std::string why = PartitionUnavailable(); !why.empty()) return Status::FailedPrecondition(why);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (on_fault_) on_fault_("partition", "postgres", "port " + std::to_string(pg_port_) + " cut for " + Millis(d));
  }
  link_cut_ = true;
  const bool cut = PartitionRules(true);
  if (cut) std::this_thread::sleep_for(d);
  link_cut_ = false;
  const bool healed = PartitionRules(false);
  std::lock_guard<std::mutex> lock(mu_);
  if (on_fault_) on_fault_("heal", "postgres", "port " + std::to_string(pg_port_));
  if (!cut || !healed) return Status::FailedPrecondition("iptables refused the partition's rules");
  return Status::OK();
}

Status ChaosServices::JumpClock(std::chrono::seconds offset, std::chrono::milliseconds d) {
  if (!fake_clock_) return Status::FailedPrecondition("the clock-jump nemesis needs the children under libfaketime");
  const std::string forward = "+" + std::to_string(offset.count()) + "s";
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (on_fault_) on_fault_("clock-jump", "services", forward + " for " + Millis(d));
  }
  if (Status s = WriteClockOffset(clock_file_, forward); !s.ok()) return s;
  std::this_thread::sleep_for(d);
  Status back = WriteClockOffset(clock_file_, "+0");
  std::lock_guard<std::mutex> lock(mu_);
  if (on_fault_) on_fault_("clock-back", "services", "+0");
  return back;
}

}  // namespace ride_booking
