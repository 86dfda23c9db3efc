// `wallet serve` (the HTTP service) and `wallet worker` (the re-drive worker
// and the reaper), on one database.
#ifndef WALLET_SERVICE_H_
#define WALLET_SERVICE_H_

#include <string>

namespace wallet {

struct Options {
  // Empty: $DATABASE_URL, or else an embedded PostgreSQL in pg_dir, shared by
  // `serve` and `worker` (the second one started attaches to the first's).
  std::string database_url;
  std::string pg_dir = ".phasekey/wallet-pg";
  std::string listen = "127.0.0.1:8070";              // serve only; port 0: any free port
  std::string gateway_url = "http://127.0.0.1:8091";  // fake_gateway in the tutorial
};

// Both run until SIGINT or SIGTERM and return the exit status; a start-up
// failure prints one line on stderr and returns 1. `serve` prints
// "listening on HOST:PORT" once it accepts requests, `worker` prints
// "worker running".
int Serve(const Options& options);
int Work(const Options& options);

}  // namespace wallet

#endif  // WALLET_SERVICE_H_
