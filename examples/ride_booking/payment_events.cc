#include "payment_events.h"

#include <pqxx/pqxx>

#include <cstdio>

namespace ride_booking {

phasekey::InboxResult ApplyPaymentEvent(pqxx::transaction_base& tx, const phasekey::InboxEvent& event) {
  if (event.type == "charge.succeeded" || event.type == "payment_intent.succeeded") {
    tx.exec_params0(
        "INSERT INTO ride_payments (charge_id, state) VALUES ($1, 'succeeded') ON CONFLICT (charge_id) DO NOTHING",
        event.object_id);
    return phasekey::InboxResult::Applied();
  }
  if (event.type == "charge.refunded") {
    const pqxx::result r = tx.exec_params(
        "UPDATE ride_payments SET state = 'refunded', updated_at = now() WHERE charge_id = $1", event.object_id);
    if (r.affected_rows() == 0) return phasekey::InboxResult::Park("the payment's succeeded event not applied yet");
    return phasekey::InboxResult::Applied();
  }
  return phasekey::InboxResult::Applied();
}

ParkedEventSweeper::ParkedEventSweeper(phasekey::Inbox* inbox, std::chrono::milliseconds interval)
    : thread_([this, inbox, interval] { Loop(inbox, interval); }) {}

ParkedEventSweeper::~ParkedEventSweeper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ParkedEventSweeper::Loop(phasekey::Inbox* inbox, std::chrono::milliseconds interval) {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (wake_.wait_for(lock, interval, [this] { return stop_; })) return;
    }
    auto report = inbox->RetryParked();
    if (!report) {
      std::fprintf(stderr, "ride_booking worker: inbox sweep: %s\n", report.error().ToString().c_str());
    } else if (report->applied > 0) {
      std::fprintf(stderr, "ride_booking worker: inbox sweep applied %zu parked events\n", report->applied);
    }
  }
}

}  // namespace ride_booking
