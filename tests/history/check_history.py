#!/usr/bin/env python3
"""Checks a chaos run's history for exactly-once, from its files alone.

Usage: check_history.py HISTORY_DIR [--json FILE]

Reads the files `ride_booking chaos --history DIR` writes (history.jsonl,
keys.jsonl, rides.jsonl, receipts.jsonl, ledger.json, gateway-operations.jsonl; see
docs/reliability.md, "The history and its checker") and nothing else: it
shares no code with the harness or the engine, so a bug in them cannot hide
itself here. Exit 0 with one summary line when every check holds; exit 1
with the first violation and the attempts that show it (then how many more
were found); exit 2 when the files are missing or unreadable. --json FILE
also writes the summary's figures there (HistoryTest records them for
docs/reliability.md).

The checks, each named in its violation:
  one-effect-per-provider-key  at most one charge per provider key
  one-effect-per-key           at most one charge per key (stable id)
  effect-of-a-sent-request     every charge, key row and ride belongs to a
                               key some client sent
  identical-2xx                every 2xx answer of a key is byte-identical,
                               first to last replay, and is what is stored
  2xx-then-only-2xx            after a 2xx, a key answers only that
                               (or a 409 while another attempt overlaps,
                               or a 503 while the database was down or
                               cut off, and 5 s after)
  409-only-when-busy           a 409 only while another attempt of the key
                               was in flight, or after an attempt of it that
                               got no final answer (its holder may still
                               hold the lease, or have died with it), or
                               during a pause, partition or database
                               restart (its holder lost the lease alive),
                               or within a lease after a process died
  422-only-for-another-body    a 422 only when the key was sent with
                               another body (fingerprint)
  terminal-after-drain         every key row is finished, dead or parked for
                               an operator
  charge-has-booking           every charge is on a ride of its key
  one-ride-per-key             at most one ride per key
  one-receipt-per-ride         at most one receipt sent per ride, for the
                               ride's own charge
  outcome-agrees-with-ledger   no final 402 or 5xx for a key that was charged;
                               a key answered 2xx is finished with that status
"""
import collections
import json
import os
import re
import sys

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TERMINAL = {"finished", "dead", "needs_operator"}


class Broken(Exception):
    """The history's files are missing or unreadable."""


def read_lines(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        raise Broken(f"{path}: {e}") from e


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise Broken(f"{path}: {e}") from e


def uuid_of(text):
    m = UUID.search(text or "")
    return m.group(0) if m else None


class History:
    def __init__(self, folder):
        events = read_lines(os.path.join(folder, "history.jsonl"))
        if not events or events[0].get("type") != "run":
            raise Broken(f"{folder}/history.jsonl: does not start with a run line")
        if events[-1].get("type") != "end":
            raise Broken(f"{folder}/history.jsonl: no end line (the run did not finish)")
        self.run = events[0]
        self.end = events[-1]
        self.attempts = [e for e in events if e.get("type") == "attempt"]
        self.requests = [e for e in events if e.get("type") == "request"]
        self.faults = [e for e in events if e.get("type") == "fault"]
        self.keys = {r["key"]: r for r in read_lines(os.path.join(folder, "keys.jsonl"))}
        self.rides = read_lines(os.path.join(folder, "rides.jsonl"))
        self.receipts = read_lines(os.path.join(folder, "receipts.jsonl"))
        self.charges = read_json(os.path.join(folder, "ledger.json"))
        ops = os.path.join(folder, "gateway-operations.jsonl")
        self.operations = read_lines(ops) if os.path.exists(ops) else []
        self.by_key = collections.defaultdict(list)
        for a in self.attempts:
            self.by_key[a["key"]].append(a)
        for attempts in self.by_key.values():
            attempts.sort(key=lambda a: (a["end_ms"], a["start_ms"]))
        self.key_by_stable_id = {r["stable_id"]: k for k, r in self.keys.items()}
        # A process killed (or dead by itself) holding a key keeps its lease
        # until it expires; a balancer may hand the request to another
        # process meanwhile, which answers 409.
        lease_ms = self.run.get("lease_ms", DEFAULT_LEASE_MS)
        self.lease_faults = fault_windows(self.faults, LEASE_FAULTS) + [
            (f["at_ms"], f["at_ms"] + lease_ms) for f in self.faults if f.get("kind") in ("kill", "died")]
        self.db_faults = fault_windows(self.faults, DB_FAULTS, DB_RECOVERY_MS)


# Faults during which a holder can lose its lease without dying: paused past
# it, cut off from the database, or the database gone (also an --event
# command: a failover, a pooler's restart). A later write of that
# holder is fenced, and the attempt it was serving answers 409.
DEFAULT_LEASE_MS = 3000  # the chaos demo's lease, for histories whose run line does not say
LEASE_FAULTS = {"pause": "resume", "partition": "heal", "db-crash": "db-start", "event": "event-end"}


# Faults during which the database cannot be read: a key answered before
# may then answer 503 (retry later; not an outcome) instead of its stored
# response, until the services' connections are made again after it ends.
DB_FAULTS = {"partition": "heal", "db-crash": "db-start", "event": "event-end"}
DB_RECOVERY_MS = 5000


def fault_windows(faults, kinds, grace_ms=0):
    """[(start_ms, end_ms)] of the faults in `kinds` (start kind: end kind), each to its end plus grace_ms (or
    forever)."""
    windows, open_at = [], {}
    for f in sorted(faults, key=lambda f: f["at_ms"]):
        kind, who = f.get("kind"), f.get("process")
        if kind in kinds:
            open_at[(kinds[kind], who)] = f["at_ms"]
        elif (kind, who) in open_at:
            windows.append((open_at.pop((kind, who)), f["at_ms"] + grace_ms))
    windows.extend((start, float("inf")) for start in open_at.values())
    return windows


class Checker:
    def __init__(self, h):
        self.h = h
        self.violations = []  # (check, message, key or None, extra lines)

    def fail(self, check, message, key=None, extra=()):
        self.violations.append((check, message, key, list(extra)))

    def run(self):
        for check in (self.effects, self.answers, self.rows, self.bookings, self.receipts, self.outcomes):
            check()
        return self.violations

    def charge_key(self, charge):
        """The key a ledger charge belongs to (by the stable id in its provider key), or None."""
        return self.h.key_by_stable_id.get(uuid_of(charge.get("idempotency_key")))

    def effects(self):
        h = self.h
        per_provider_key = collections.defaultdict(list)
        per_stable_id = collections.defaultdict(list)
        for c in h.charges:
            per_provider_key[c.get("idempotency_key")].append(c)
            per_stable_id[uuid_of(c.get("idempotency_key"))].append(c)
        for pk, charges in per_provider_key.items():
            if len(charges) > 1:
                self.fail("one-effect-per-provider-key", f"{len(charges)} charges under provider key {pk}",
                          self.charge_key(charges[0]), [json.dumps(c) for c in charges])
        for sid, charges in per_stable_id.items():
            if len(charges) > 1 and len({c.get("idempotency_key") for c in charges}) > 1:
                self.fail("one-effect-per-key",
                          f"{len(charges)} charges for one key (stable id {sid}) under different provider keys",
                          h.key_by_stable_id.get(sid), [json.dumps(c) for c in charges])
        for c in h.charges:
            key = self.charge_key(c)
            if key is None:
                self.fail("effect-of-a-sent-request", f"charge {c.get('id')} belongs to no key row of the run",
                          None, [json.dumps(c)])
        sent = set(h.by_key)
        for key in h.keys:
            if key not in sent:
                self.fail("effect-of-a-sent-request", f"key row {key} was never sent by a client", key,
                          [json.dumps(h.keys[key])])
        rides = collections.Counter(r["key"] for r in h.rides)
        for key, n in rides.items():
            if key not in sent:
                self.fail("effect-of-a-sent-request", f"a ride under {key}, which no client sent", key)
            if n > 1:
                self.fail("one-ride-per-key", f"{n} rides under one key", key)

    def answers(self):
        for key, attempts in self.h.by_key.items():
            self.answers_of(key, attempts)

    def answers_of(self, key, attempts):
        row = self.h.keys.get(key)
        bodies = {a["body_sha256"] for a in attempts if 200 <= a["status"] < 300}
        if row and row.get("response_sha256") and row.get("response_status") and 200 <= row["response_status"] < 300:
            bodies.add(row["response_sha256"])
        if len(bodies) > 1:
            self.fail("identical-2xx", f"{len(bodies)} different 2xx bodies (stored and answered)", key)
        fingerprints = {a.get("fingerprint") for a in attempts}
        ok_at = None
        for i, a in enumerate(attempts):
            status = a["status"]
            if a["transport"] != "answered":
                continue
            if (ok_at is not None and not 200 <= status < 300 and not (status == 409 and self.overlaps(a, attempts))
                    and not (status == 503 and self.during(a, self.h.db_faults))):
                self.fail("2xx-then-only-2xx", f"answered {status} after a 2xx", key)
            if (status == 409 and not self.overlaps(a, attempts) and not self.unfinished_before(a, attempts[:i])
                    and not self.during(a, self.h.lease_faults)):
                self.fail("409-only-when-busy", "a 409 while no other attempt of the key was in flight", key)
            if status == 422 and len(fingerprints) <= 1:
                self.fail("422-only-for-another-body", "a 422 though every attempt sent the same body", key)
            if 200 <= status < 300 and ok_at is None:
                ok_at = i

    @staticmethod
    def interval(a):
        return (a["sent_ms"] if a.get("sent_ms") else a["start_ms"], a["end_ms"])

    def overlaps(self, a, attempts):
        s, e = self.interval(a)
        return any(b is not a and self.interval(b)[0] < e and s < self.interval(b)[1] for b in attempts)

    def during(self, a, windows):
        s, e = self.interval(a)
        return any(start < e and s < end for start, end in windows)

    @staticmethod
    def unfinished_before(a, earlier):
        """An earlier attempt got no final answer: its holder (or the worker) may hold the lease."""
        return any(b["retry"] or b["transport"] != "answered" for b in earlier)

    def rows(self):
        for key, row in self.h.keys.items():
            if row["state"] not in TERMINAL:
                self.fail("terminal-after-drain", f"key row left {row['state']} at {row['recovery_point']}", key,
                          [json.dumps(row)])

    def receipts(self):
        """At most one receipt per ride (an email to the rider), for the ride's own charge."""
        rides = {r["ride_id"]: r for r in self.h.rides}
        per_ride = collections.defaultdict(list)
        for r in self.h.receipts:
            per_ride[r["ride_id"]].append(r)
        for ride_id, sent in per_ride.items():
            ride = rides.get(ride_id)
            key = ride["key"] if ride else None
            if len(sent) > 1:
                self.fail("one-receipt-per-ride", f"{len(sent)} receipts sent for ride {ride_id}", key,
                          [json.dumps(r) for r in sent])
            for r in sent:
                if ride is None or r["charge_id"] != ride.get("charge_id"):
                    self.fail("one-receipt-per-ride", f"receipt job {r['job_id']} names charge {r['charge_id']}, "
                              f"not its ride's", key, [json.dumps(r), json.dumps(ride)])

    def bookings(self):
        ride_of_charge = {r["charge_id"]: r for r in self.h.rides if r.get("charge_id")}
        for c in self.h.charges:
            ride = ride_of_charge.get(c.get("id"))
            key = self.charge_key(c)
            if ride is None:
                self.fail("charge-has-booking", f"charge {c.get('id')} is on no ride (money taken, nothing booked)",
                          key, [json.dumps(c)])
            elif key is not None and uuid_of(ride["key"]) != uuid_of(key):
                self.fail("charge-has-booking", f"charge {c.get('id')} is on the ride of another key ({ride['key']})",
                          key, [json.dumps(c), json.dumps(ride)])

    def outcomes(self):
        charged = {self.charge_key(c) for c in self.h.charges}
        for key, attempts in self.h.by_key.items():
            final = [a for a in attempts if a["transport"] == "answered" and not a["retry"]]
            row = self.h.keys.get(key)
            for a in final:
                if (a["status"] == 402 or a["status"] >= 500) and key in charged:
                    self.fail("outcome-agrees-with-ledger", f"answered {a['status']} but the key was charged", key)
                    break
            ok = [a for a in final if 200 <= a["status"] < 300]
            if ok and (row is None or row["state"] != "finished" or row.get("response_status") != ok[0]["status"]):
                self.fail("outcome-agrees-with-ledger", f"answered {ok[0]['status']} but its key row says "
                          f"{json.dumps(row) if row else 'nothing (no row)'}", key)


def figures(h, violations):
    gateway = collections.Counter(o["op"] for o in h.operations)
    gateway["dropped"] = sum(1 for o in h.operations if o.get("dropped"))
    return {
        "keys": len(h.by_key),
        "attempts": len(h.attempts),
        "answered": sum(1 for a in h.attempts if a["transport"] == "answered"),
        "charges": len(h.charges),
        "faults": dict(sorted(collections.Counter(f["kind"] for f in h.faults).items())),
        "gateway": {k: n for k, n in sorted(gateway.items()) if n},
        "planted_bug": h.run.get("planted_bug") or "",
        "seed": h.run.get("seed"),
        "nemeses": h.run.get("nemeses") or ["kill"],
        "minutes": round((h.end["at_ms"] - h.run["at_ms"]) / 60000, 1) if "at_ms" in h.run else None,
        "receipts": len(h.receipts),
        "violations": len(violations),
        "first_violation": violations[0][0] if violations else None,
    }


def summary(h, violations):
    faults = collections.Counter(f["kind"] for f in h.faults)
    gateway = collections.Counter(o["op"] for o in h.operations)
    gateway["dropped"] = sum(1 for o in h.operations if o.get("dropped"))
    answered = sum(1 for a in h.attempts if a["transport"] == "answered")
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(faults.items())) or "none"
    ops = ", ".join(f"{k} {n}" for k, n in sorted(gateway.items()) if n) or "none"
    bug = h.run.get("planted_bug") or "none"
    return (f"{len(h.by_key)} keys, {len(h.attempts)} attempts ({answered} answered), {len(h.charges)} charges; "
            f"faults: {kinds}; gateway: {ops}; planted bug: {bug}; violations {len(violations)}")


def main(argv):
    args = argv[1:]
    json_out = None
    if len(args) == 3 and args[1] == "--json":
        json_out = args[2]
        args = args[:1]
    if len(args) != 1:
        print("usage: check_history.py HISTORY_DIR [--json FILE]", file=sys.stderr)
        return 2
    try:
        h = History(args[0])
    except Broken as e:
        print(f"history: unreadable: {e}", file=sys.stderr)
        return 2
    violations = Checker(h).run()
    if json_out:
        with open(json_out, "w", encoding="utf-8") as f:
            json.dump(figures(h, violations), f, indent=2)
            f.write("\n")
    if not violations:
        print(f"history: OK: {summary(h, violations)}")
        return 0
    check, message, key, extra = violations[0]
    print(f"history: VIOLATION {check}: {message}" + (f" (key {key})" if key else ""))
    for a in h.by_key.get(key, []):
        print("  attempt " + json.dumps(a, sort_keys=True))
    if key in h.keys:
        print("  key row " + json.dumps(h.keys[key], sort_keys=True))
    for line in extra:
        print("  " + line)
    if len(violations) > 1:
        print(f"history: {len(violations) - 1} more violations; first of each check:")
        seen = {check}
        for c, m, k, _ in violations[1:]:
            if c not in seen:
                seen.add(c)
                print(f"  {c}: {m}" + (f" (key {k})" if k else ""))
    print(f"history: FAIL: {summary(h, violations)}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
