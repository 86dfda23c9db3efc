#!/usr/bin/env python3
"""check_history.py on hand-made histories: a valid one passes, and each
kind of violation, planted in a copy, fails it naming its check."""
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_history.py")
K1 = "018c0000-0000-7000-8000-000000000001"
K2 = "018c0000-0000-7000-8000-000000000002"
S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"


def attempt(key, n, start, end, status, body="b1", send="first", retry=False, transport="answered", fp="f1"):
    return {"type": "attempt", "key": key, "client": 0, "request": 0, "send": send, "attempt": n,
            "fingerprint": fp, "start_ms": start, "sent_ms": start + 1, "end_ms": end, "transport": transport,
            "status": status if transport == "answered" else 0,
            "body_sha256": body if transport == "answered" else None, "replayed": send == "replay", "retry": retry}


def valid():
    return {
        "history": [
            {"type": "run", "run_id": "r", "planted_bug": "", "lease_ms": 5},
            attempt(K1, 1, 0, 10, 0, transport="connection reset", retry=True),
            {"type": "fault", "kind": "kill", "process": "service", "at_ms": 9, "detail": ""},
            attempt(K1, 2, 10, 20, 409, body="busy", retry=True),
            attempt(K1, 3, 20, 30, 201),
            attempt(K1, 1, 30, 40, 201, send="replay"),
            attempt(K2, 1, 50, 60, 402, body="declined"),
            attempt(K2, 1, 60, 70, 402, body="declined", send="replay"),
            {"type": "end", "at_ms": 80},
        ],
        "keys": [
            {"key": K1, "stable_id": S1, "state": "finished", "recovery_point": "finished", "response_status": 201,
             "response_sha256": "b1"},
            {"key": K2, "stable_id": S2, "state": "finished", "recovery_point": "finished", "response_status": 402,
             "response_sha256": "declined"},
        ],
        "rides": [{"key": K1, "user_id": 1, "charge_id": "ch_1", "ride_id": 1},
                  {"key": K2, "user_id": 13, "charge_id": None, "ride_id": 2}],
        "receipts": [{"job_id": 7, "ride_id": 1, "charge_id": "ch_1"}],
        "ledger": [{"id": "ch_1", "idempotency_key": S1 + ":charge"}],
    }


def check(h):
    with tempfile.TemporaryDirectory() as d:
        for name, rows in (("history.jsonl", h["history"]), ("keys.jsonl", h["keys"]), ("rides.jsonl", h["rides"]),
                           ("receipts.jsonl", h["receipts"])):
            with open(os.path.join(d, name), "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in rows)
        with open(os.path.join(d, "ledger.json"), "w") as f:
            json.dump(h["ledger"], f)
        r = subprocess.run([sys.executable, CHECKER, d], capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr


class CheckHistoryTest(unittest.TestCase):
    def assertCaught(self, h, name):
        code, out = check(h)
        self.assertEqual(code, 1, out)
        self.assertIn("VIOLATION " + name, out)

    def test_a_valid_history_passes(self):
        code, out = check(valid())
        self.assertEqual(code, 0, out)
        self.assertIn("history: OK: 2 keys, 6 attempts", out)
        self.assertIn("kill 1", out)

    def test_a_second_charge_under_the_same_provider_key_fails(self):
        h = valid()
        h["ledger"].append({"id": "ch_2", "idempotency_key": S1 + ":charge"})
        self.assertCaught(h, "one-effect-per-provider-key")

    def test_a_second_charge_under_a_new_provider_key_fails(self):
        h = valid()
        h["ledger"].append({"id": "ch_2", "idempotency_key": S1 + ":charge-2"})
        self.assertCaught(h, "one-effect-per-key")

    def test_a_charge_of_no_key_fails(self):
        h = valid()
        h["ledger"].append({"id": "ch_3", "idempotency_key": "33333333-3333-4333-8333-333333333333:charge"})
        self.assertCaught(h, "effect-of-a-sent-request")

    def test_a_replay_with_another_body_fails(self):
        h = valid()
        h["history"][5]["body_sha256"] = "b2"
        self.assertCaught(h, "identical-2xx")

    def test_a_stored_response_other_than_the_answer_fails(self):
        h = valid()
        h["keys"][0]["response_sha256"] = "empty"
        self.assertCaught(h, "identical-2xx")

    def test_an_error_after_a_2xx_fails(self):
        h = valid()
        h["history"][5].update(status=500, body_sha256="e")
        self.assertCaught(h, "2xx-then-only-2xx")

    def test_a_409_with_nothing_in_flight_fails(self):
        h = valid()
        h["history"][6].update(status=409, retry=True)
        self.assertCaught(h, "409-only-when-busy")

    def test_a_409_while_another_attempt_overlaps_passes(self):
        h = valid()
        h["history"].insert(6, attempt(K2, 1, 40, 65, 402, body="declined"))
        h["history"][7].update(status=409, retry=True, start_ms=50, sent_ms=51)
        code, out = check(h)
        self.assertEqual(code, 0, out)

    def test_a_422_for_the_same_body_fails(self):
        h = valid()
        h["history"][7].update(status=422, body_sha256="mismatch")
        self.assertCaught(h, "422-only-for-another-body")

    def test_a_key_left_active_fails(self):
        h = valid()
        h["keys"][1]["state"] = "active"
        self.assertCaught(h, "terminal-after-drain")

    def test_a_charge_without_its_ride_fails(self):
        h = valid()
        h["rides"][0]["charge_id"] = None
        self.assertCaught(h, "charge-has-booking")

    def test_a_decline_of_a_charged_key_fails(self):
        h = valid()
        h["ledger"].append({"id": "ch_9", "idempotency_key": S2 + ":charge"})
        h["rides"][1]["charge_id"] = "ch_9"
        self.assertCaught(h, "outcome-agrees-with-ledger")

    def test_a_second_ride_for_one_key_fails(self):
        h = valid()
        h["rides"].append({"key": K1, "user_id": 1, "charge_id": None, "ride_id": 3})
        self.assertCaught(h, "one-ride-per-key")

    def test_a_second_receipt_for_one_ride_fails(self):
        h = valid()
        h["receipts"].append({"job_id": 8, "ride_id": 1, "charge_id": "ch_1"})
        self.assertCaught(h, "one-receipt-per-ride")

    def test_a_receipt_naming_another_charge_fails(self):
        h = valid()
        h["receipts"][0]["charge_id"] = "ch_2"
        self.assertCaught(h, "one-receipt-per-ride")

    def test_a_409_within_a_lease_after_a_kill_passes(self):
        h = valid()
        h["history"][6].update(status=409, retry=True)  # K2's first attempt, 50..60
        h["history"].insert(1, {"type": "fault", "kind": "kill", "process": "service", "at_ms": 48, "detail": ""})
        code, out = check(h)
        self.assertEqual(code, 0, out)
        h["history"][1]["at_ms"] = 40  # its lease (5 ms) ended before the attempt
        self.assertCaught(h, "409-only-when-busy")

    def test_a_503_after_a_2xx_passes_only_while_the_database_is_down(self):
        h = valid()
        h["history"][5].update(status=503, body_sha256="unavailable", retry=True)  # K1's replay, 30..40
        self.assertCaught(h, "2xx-then-only-2xx")
        h["history"].insert(1, {"type": "fault", "kind": "db-crash", "process": "postgres", "at_ms": 25, "detail": ""})
        h["history"].insert(2, {"type": "fault", "kind": "db-start", "process": "postgres", "at_ms": 28, "detail": ""})
        code, out = check(h)  # within the reconnection grace after db-start
        self.assertEqual(code, 0, out)

    def test_a_409_during_a_pause_passes_and_outside_it_fails(self):
        h = valid()
        h["history"][6].update(status=409, retry=True)  # K2's first attempt, 50..60
        h["history"].insert(1, {"type": "fault", "kind": "pause", "process": "service", "at_ms": 45, "detail": ""})
        h["history"].insert(2, {"type": "fault", "kind": "resume", "process": "service", "at_ms": 55, "detail": ""})
        code, out = check(h)
        self.assertEqual(code, 0, out)
        h["history"][2]["at_ms"] = 46
        h["history"][1]["at_ms"] = 40
        self.assertCaught(h, "409-only-when-busy")

    def test_a_history_without_its_end_is_unreadable(self):
        h = valid()
        h["history"].pop()
        code, out = check(h)
        self.assertEqual(code, 2, out)


if __name__ == "__main__":
    unittest.main()
