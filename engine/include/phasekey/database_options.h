// DatabaseOptions: how phasekey connects to PostgreSQL. One struct, each
// default explained. Every connection gets the timeouts below in its
// connection string, and every database call gets a deadline enforced by a
// watchdog, because libpq can otherwise block forever on a half-dead socket.
#ifndef PHASEKEY_DATABASE_OPTIONS_H_
#define PHASEKEY_DATABASE_OPTIONS_H_

#include <chrono>
#include <cstddef>
#include <string>

namespace phasekey {

// The connection settings every phasekey component takes (the runner, the
// workers, the inbox). Only `url` is required.
struct DatabaseOptions {
  // libpq URL ("postgresql://user@host:port/db") or key/value string.
  std::string url;

  // Connections in the pool. The pool never opens more; callers beyond this
  // wait for a free one. 8 covers a 2-4 core service: PostgreSQL's group
  // commit stops paying off well before 16 connections per core.
  std::size_t pool_size = 8;

  // How long Acquire() waits for a free connection before failing with
  // kRetryable. Short, so an overloaded service sheds load (503) instead of
  // queueing requests behind each other.
  std::chrono::milliseconds checkout_timeout{2000};

  // Deadline of one database call (a transaction from BEGIN to COMMIT, or one
  // statement). Past it the watchdog shuts the socket down and the call fails
  // with kDeadlineExceeded (kOutcomeUnknown if COMMIT had been sent). 4 s is
  // far above any statement phasekey issues (all indexed, single-row) yet
  // short enough that a request still answers within an HTTP timeout, and
  // below RunnerOptions::lease_margin's 5 s, as Runner::Open requires (a
  // renewal or a recorded move may take the whole deadline).
  std::chrono::milliseconds call_deadline{4000};

  // libpq connect_timeout (seconds; libpq's granularity). 5 s: a local or
  // same-region server answers in milliseconds.
  int connect_timeout_s = 5;

  // TCP keepalives: probe an idle connection after 10 s, every 5 s, give up
  // after 3 missed probes: a dead peer is noticed in about 25 s.
  int keepalives_idle_s = 10;
  // Seconds between two keepalive probes.
  int keepalives_interval_s = 5;
  // Missed probes after which the connection is dead.
  int keepalives_count = 3;

  // TCP_USER_TIMEOUT: unacknowledged data for this long kills the connection
  // (covers a peer that vanished with bytes in flight, which keepalives do
  // not). Equal to call_deadline plus margin.
  std::chrono::milliseconds tcp_user_timeout{10000};

  // Whether the engine prepares its statements once per connection (true:
  // the server parses and plans each only once) or sends every statement
  // with its text (false). Set false when connecting through a pooler in
  // transaction mode that cannot carry prepared statements between server
  // connections, such as Debian 12's PgBouncer 1.18; docs/scaling.md has
  // what it costs per request.
  bool prepared_statements = true;

  // How long the server lets one of the pool's sessions sit idle inside a
  // transaction before it ends the session (PostgreSQL's
  // idle_in_transaction_session_timeout, set on each connection as it
  // opens). It guards against a client that vanished mid-transaction
  // without the server noticing (a network partition, a process frozen or
  // killed while its socket stays open): that transaction would keep its
  // key's claim gate and row locks until TCP gave up on the connection, and
  // no retry could claim the key meanwhile. The engine never leaves a
  // transaction open past call_deadline (the watchdog ends the call), so any
  // value above it ends only orphans; 10 s is twice the default deadline.
  // Must exceed call_deadline, or be 0 to leave the server's own setting.
  // Set only with prepared_statements: through a transaction-mode pooler a
  // session setting does not follow the server connections, so set the
  // pooler's own limit instead (PgBouncer's idle_transaction_timeout;
  // docs/scaling.md).
  std::chrono::milliseconds idle_in_transaction_timeout{10000};

  // Where the re-drive worker listens for wake-ups (LISTEN needs a session
  // of its own): a direct or session-pooled URL. Empty: `url`. Through a
  // transaction-mode pooler, set it, or the worker only polls.
  std::string session_url;
};

}  // namespace phasekey

#endif  // PHASEKEY_DATABASE_OPTIONS_H_
