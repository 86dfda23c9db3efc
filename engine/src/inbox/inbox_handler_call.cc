#include "inbox/inbox_handler_call.h"

#include <pqxx/except>

#include <string>

namespace phasekey::inbox {

InboxResult CallHandler(const InboxHandler& handler, pqxx::transaction_base& tx, const InboxEvent& event,
                        HandlerFailure on_database_error) {
  try {
    return handler(tx, event);
  } catch (const pqxx::broken_connection&) {
    throw;
  } catch (const pqxx::in_doubt_error&) {
    throw;
  } catch (const pqxx::failure& e) {
    if (on_database_error == HandlerFailure::kPropagateDatabase) throw;
    return InboxResult::Retry(std::string("handler database error: ") + e.what());
  } catch (const std::exception& e) {
    return InboxResult::Retry(std::string("handler threw: ") + e.what());
  } catch (...) {
    return InboxResult::Retry("handler threw a non-standard exception");
  }
}

}  // namespace phasekey::inbox
