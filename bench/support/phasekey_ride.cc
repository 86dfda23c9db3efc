#include "support/phasekey_ride.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "phasekey/metrics.h"
#include "phasekey/runner.h"
#include "support/exposition.h"

namespace phasekey::bench {
namespace {

[[noreturn]] void Fail(const std::string& what) {
  throw std::runtime_error("key-encryption key file: " + what + ": " + std::strerror(errno));
}

}  // namespace

Result<RideRun> RunPhasekeyRides(const std::string& url, const LoadOptions& load, const std::string& prefix,
                                 TestGateway* gateway, const RideOptions& ride) {
  RunnerOptions options;
  options.database.url = url;
  options.database.prepared_statements = ride.prepared_statements;
  options.database.pool_size = static_cast<std::size_t>(load.clients);
  options.metrics = Metrics::Create();
  options.encryption = ride.encryption;
  auto runner = Runner::Open(options, {MakeRideFlow(gateway)});
  if (!runner) return runner.error();
  RideRun run;
  run.stats = RunLoad(load, [&](int) -> RequestFn {
    return [&](std::int64_t seq) {
      Reply r = (*runner)->Execute(
          "create_ride",
          Request{"acct-" + std::to_string(seq % 64), prefix + std::to_string(seq), "POST", "/rides", RideBody(seq)});
      return r.kind == Reply::Kind::kCompleted;
    };
  });
  run.commits_per_req = testing::SampleOf(options.metrics->Exposition(), "phasekey_commits_total") /
                        static_cast<double>(load.requests + load.warmup);
  return run;
}

std::string WriteKekFile() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/phasekey-bench-kek-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) Fail("mkdtemp " + dir);
  unsigned char key[32];
  const int random = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (random < 0 || read(random, key, sizeof key) != static_cast<ssize_t>(sizeof key)) Fail("/dev/urandom");
  close(random);
  std::string line = "bench-kek ";
  for (unsigned char b : key) {
    static constexpr char kHex[] = "0123456789abcdef";
    line += kHex[b >> 4];
    line += kHex[b & 15];
  }
  line += '\n';
  const std::string path = dir + "/keks";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) Fail("create " + path);
  // The mode regardless of the umask: the keyring refuses anything looser.
  if (fchmod(fd, 0600) != 0 || write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    Fail("write " + path);
  }
  close(fd);
  return path;
}

void RemoveKekFile(const std::string& path) {
  std::error_code ignored;
  std::filesystem::remove_all(std::filesystem::path(path).parent_path(), ignored);
}

}  // namespace phasekey::bench
