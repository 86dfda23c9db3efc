#include "support/process_cpu.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <pqxx/pqxx>
#include <sstream>
#include <vector>

namespace phasekey::bench {
namespace {

double Ticks() { return static_cast<double>(::sysconf(_SC_CLK_TCK)); }

// Fields 3 and on of /proc/<pid>/stat (f[0] is the state), up to `n` of
// them; empty when the process is gone.
std::vector<std::string> StatFields(pid_t pid, std::size_t n) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return {};
  std::istringstream rest(text.substr(text.rfind(')') + 2));  // after "pid (comm) "
  std::vector<std::string> f;
  std::string word;
  while (f.size() < n && rest >> word) f.push_back(word);
  return f;
}

// The parent of `pid` (0 when it is gone).
pid_t ParentOf(pid_t pid) {
  const std::vector<std::string> f = StatFields(pid, 2);
  return f.size() < 2 ? 0 : static_cast<pid_t>(std::stol(f[1]));
}

// The live children of `parent`.
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (ParentOf(pid) == parent) out.push_back(pid);
  }
  return out;
}

std::string CommandOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

}  // namespace

double ProcessCpuUs(pid_t pid, bool children) {
  const std::vector<std::string> f = StatFields(pid, 15);
  if (f.size() < 15) return 0;
  // f[11] utime, f[12] stime, f[13] cutime, f[14] cstime (fields 14 to 17).
  double ticks = std::stod(f[11]) + std::stod(f[12]);
  if (children) ticks += std::stod(f[13]) + std::stod(f[14]);
  return ticks * 1e6 / Ticks();
}

double MachineBusyUs() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;
  std::vector<double> v;
  double x = 0;
  while (v.size() < 8 && in >> x) v.push_back(x);
  if (v.size() < 5) return 0;
  double busy = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i != 3 && i != 4) busy += v[i];  // all but idle and iowait
  }
  return busy * 1e6 / Ticks();
}

pid_t PostmasterOf(int backend_pid) {
  const auto backend = static_cast<pid_t>(backend_pid);
  if (CommandOf(backend) != "postgres") return 0;
  const pid_t postmaster = ParentOf(backend);
  return CommandOf(postmaster) == "postgres" ? postmaster : 0;
}

pid_t LocalPostmaster(const std::string& url) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  return PostmasterOf(tx.exec1("SELECT pg_backend_pid()")[0].as<int>());
}

double ServerCpuUs(pid_t postmaster) {
  double sum = ProcessCpuUs(postmaster, /*children=*/true);
  for (pid_t pid : ChildrenOf(postmaster)) sum += ProcessCpuUs(pid);
  return sum;
}

}  // namespace phasekey::bench
