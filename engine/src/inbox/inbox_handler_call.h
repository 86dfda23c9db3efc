// Calling an inbox handler: the one place where its exceptions are turned
// into an InboxResult.
#ifndef PHASEKEY_SRC_INBOX_INBOX_HANDLER_CALL_H_
#define PHASEKEY_SRC_INBOX_INBOX_HANDLER_CALL_H_

#include "phasekey/inbox.h"

namespace phasekey::inbox {

// What a database exception thrown by the handler means.
enum class HandlerFailure {
  // Rethrown: the caller's transaction aborts and the pool classifies it
  // (the event's own delivery: nothing is recorded, redelivery runs it).
  kPropagateDatabase,
  // Returned as Retry, for the caller to roll back to its savepoint (a
  // parked event's retry: it stays parked). A lost connection is rethrown
  // all the same: there is no transaction left to roll back in.
  kAsRetry,
};

// Runs `handler`; any other exception (not from the database) becomes
// Retry(what()). Never throws anything but a libpqxx exception.
InboxResult CallHandler(const InboxHandler& handler, pqxx::transaction_base& tx, const InboxEvent& event,
                        HandlerFailure on_database_error);

}  // namespace phasekey::inbox

#endif  // PHASEKEY_SRC_INBOX_INBOX_HANDLER_CALL_H_
