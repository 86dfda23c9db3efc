// wallet: the tutorial's service (docs/tutorial.md), a wallet top-up on
// phasekey.
//   wallet serve    the HTTP service: POST /topups, GET /wallet
//   wallet worker   finishes top-ups their clients abandoned
#include <CLI/CLI.hpp>

#include "service.h"

namespace {

void AddCommonFlags(CLI::App* cmd, wallet::Options* o) {
  cmd->add_option("--database-url", o->database_url, "PostgreSQL URL (default: $DATABASE_URL, else embedded)");
  cmd->add_option("--pg-dir", o->pg_dir, "folder of the embedded PostgreSQL")->capture_default_str();
  cmd->add_option("--gateway-url", o->gateway_url, "the payment gateway")->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"wallet: top-ups charged exactly once, on phasekey", "wallet"};
  app.require_subcommand(1);
  wallet::Options options;
  int code = 0;

  CLI::App* serve = app.add_subcommand("serve", "run the HTTP service");
  AddCommonFlags(serve, &options);
  serve->add_option("--listen", options.listen, "HOST:PORT to listen on (port 0: any free port)")
      ->capture_default_str();
  serve->callback([&] { code = wallet::Serve(options); });

  CLI::App* worker = app.add_subcommand("worker", "run the re-drive worker and the reaper");
  AddCommonFlags(worker, &options);
  worker->callback([&] { code = wallet::Work(options); });

  CLI11_PARSE(app, argc, argv);
  return code;
}
