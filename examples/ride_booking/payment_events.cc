#include "payment_events.h"

#include <pqxx/pqxx>

namespace ride_booking {

phasekey::InboxResult ApplyPaymentEvent(pqxx::work& tx, const phasekey::InboxEvent& event) {
  if (event.type == "charge.succeeded") {
    tx.exec_params0(
        "INSERT INTO ride_payments (charge_id, state) VALUES ($1, 'succeeded') ON CONFLICT (charge_id) DO NOTHING",
        event.object_id);
    return phasekey::InboxResult::Applied();
  }
  if (event.type == "charge.refunded") {
    const pqxx::result r = tx.exec_params(
        "UPDATE ride_payments SET state = 'refunded', updated_at = now() WHERE charge_id = $1", event.object_id);
    if (r.affected_rows() == 0) return phasekey::InboxResult::Park("charge.succeeded not applied yet");
    return phasekey::InboxResult::Applied();
  }
  return phasekey::InboxResult::Applied();
}

}  // namespace ride_booking
