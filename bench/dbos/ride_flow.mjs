// The ride flow of tests/support/ride_flow.cc written for DBOS Transact
// (@dbos-inc/dbos-sdk 5.3.0): a workflow whose ID is the idempotency key and
// whose three steps are the same business statements: INSERT the ride;
// charge an in-process gateway (no added latency); UPDATE the ride and
// INSERT the staged receipt job in one transaction. Run by
// bench/peer_bench.cc (the driver), which passes the database, the number
// of concurrent clients and of requests, and reads one JSON line from
// stdout: {"requests", "failures", "wall_s", "latencies_ms": [...]}.
//
// Usage: node ride_flow.mjs URL CLIENTS REQUESTS WARMUP PREFIX
import { DBOS } from '@dbos-inc/dbos-sdk';
import pg from 'pg';

const [url, clientsArg, requestsArg, warmupArg, prefix] = process.argv.slice(2);
const clients = Number(clientsArg);
const requests = Number(requestsArg);
const warmup = Number(warmupArg);

const app = new pg.Pool({ connectionString: url, max: clients });
let charges = 0;
const gateway = { charge: async (providerKey) => `ch_${++charges}_${providerKey.length}` };

async function createRide(account, key, body) {
  const request = JSON.parse(body);
  await DBOS.runStep(async () => {
    await app.query('INSERT INTO rides (account, idem_key, origin_lat) VALUES ($1, $2, $3)',
                    [account, key, request.origin_lat ?? 0]);
  }, { name: 'create_ride' });
  const charge = await DBOS.runStep(() => gateway.charge(`${DBOS.workflowID}-charge`), { name: 'charge' });
  const rideId = await DBOS.runStep(async () => {
    const c = await app.connect();
    try {
      await c.query('BEGIN');
      const ride = await c.query(
        'UPDATE rides SET charge_id = $3 WHERE account = $1 AND idem_key = $2 RETURNING id', [account, key, charge]);
      await c.query("INSERT INTO staged_jobs (job_name, job_args) VALUES ('send_ride_receipt', $1::jsonb)",
                    [JSON.stringify({ account, charge_id: charge })]);
      await c.query('COMMIT');
      return Number(ride.rows[0].id);
    } catch (e) {
      await c.query('ROLLBACK').catch(() => {});
      throw e;
    } finally {
      c.release();
    }
  }, { name: 'send_receipt' });
  return { status: 201, body: JSON.stringify({ ride_id: rideId, charge_id: charge }) };
}
const createRideWorkflow = DBOS.registerWorkflow(createRide, { name: 'create_ride' });

function rideBody(seq) {
  const lat = 37.0 + (seq % 1000) / 1000.0;
  return `{"origin_lat":${lat.toFixed(3)},"origin_lon":-122.4,"target_lat":37.8,"target_lon":-122.27}`;
}

async function one(seq) {
  const account = `acct-${seq % 64}`;
  const key = `${prefix}${seq}`;
  const handle = await DBOS.startWorkflow(createRideWorkflow, { workflowID: `${account}/${key}` })(
    account, key, rideBody(seq));
  const reply = await handle.getResult();
  return reply.status === 201;
}

// Closed loop: `clients` async clients share a budget of `total` requests.
async function load(total, offset, latencies) {
  let next = 0;
  let failures = 0;
  const client = async () => {
    for (;;) {
      const seq = next++;
      if (seq >= total) return;
      const t0 = process.hrtime.bigint();
      let ok = false;
      try {
        ok = await one(offset + seq);
      } catch (e) {
        if (failures === 0) console.error(`dbos request failed: ${e.message}`);
      }
      if (latencies) latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (!ok) failures++;
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  return failures;
}

DBOS.setConfig({
  name: 'phasekey-bench',
  systemDatabaseUrl: url,
  systemDatabasePoolSize: clients + 4,
  logLevel: 'error',
});
await DBOS.launch();
await load(warmup, requests, null);
const latencies = [];
const t0 = process.hrtime.bigint();
const failures = await load(requests, 0, latencies);
const wall = Number(process.hrtime.bigint() - t0) / 1e9;
await DBOS.shutdown();
await app.end();
process.stdout.write(JSON.stringify({ requests, failures, wall_s: wall, charges, latencies_ms: latencies }) + '\n');
process.exit(0);
