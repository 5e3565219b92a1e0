// bench/peers.mjs - one peer queue's side of `make bench-peers` (bench/bench.py runs it in a
// temporary directory where npm installed graphile-worker, pg-boss and pg):
//
//   node peers.mjs setup SYSTEM JOBS      install the peer's schema and queue JOBS jobs
//   node peers.mjs run SYSTEM WORKERS     work the queue with WORKERS concurrent jobs until SIGTERM
//
// The database is the one of the PG* environment variables. Every job's handler inserts one row
// into bench_sink, as pg_relay's bench handler does; bench.py times the drain from those rows.
// The settings are the peers' own documented ones for throughput (docs/design/benchmark-notes.md
// says which).
import pg from "pg";

const [mode, system, arg] = process.argv.slice(2);
const n = Number(arg);
const conn = {
  host: process.env.PGHOST,
  port: Number(process.env.PGPORT),
  user: process.env.PGUSER,
  database: process.env.PGDATABASE,
};
const SINK = "INSERT INTO bench_sink (payload) VALUES ($1)";
const CHUNK = 1000;

function specs(from, count) {
  return Array.from({ length: count }, (_, i) => ({ n: from + i }));
}

async function graphileWorker() {
  const { run, makeWorkerUtils } = await import("graphile-worker");
  if (mode === "setup") {
    const pgPool = new pg.Pool({ ...conn, max: 2 });
    pgPool.on("error", (e) => console.error("pg:", e.message));
    const utils = await makeWorkerUtils({ pgPool });
    await utils.migrate();
    for (let i = 0; i < n; i += CHUNK) {
      await utils.addJobs(specs(i, Math.min(CHUNK, n - i)).map((payload) => ({ identifier: "bench", payload })));
    }
    await utils.release();
    await pgPool.end();
    return;
  }
  // The preset of graphile-worker's performance page (website/docs/performance.md, "Quick stats"):
  // a local queue of 500 jobs per fetch, and job completions batched as soon as possible. Its
  // performance test also turns off the log line of every successful job (NO_LOG_SUCCESS=1, which
  // bench.py sets).
  const pgPool = new pg.Pool({ ...conn, max: n + 1 });
  pgPool.on("error", (e) => console.error("pg:", e.message));
  const runner = await run({
    pgPool,
    noHandleSignals: true,
    preset: {
      worker: {
        concurrentJobs: n,
        maxPoolSize: n + 1,
        localQueue: { size: 500 },
        completeJobBatchDelay: 0,
        failJobBatchDelay: 0,
      },
    },
    taskList: {
      bench: async (payload, helpers) => {
        await helpers.query(SINK, [String(payload.n)]);
      },
    },
  });
  console.log("ready");
  await new Promise((resolve) => process.once("SIGTERM", resolve));
  await runner.stop();
  await pgPool.end();
}

async function pgBoss() {
  const { PgBoss } = await import("pg-boss");
  const boss = new PgBoss({ ...conn, max: mode === "setup" ? 2 : n + 2 });
  boss.on("error", (e) => console.error("pg-boss:", e.message));
  await boss.start();
  if (mode === "setup") {
    if (!(await boss.getQueue("bench"))) await boss.createQueue("bench");
    for (let i = 0; i < n; i += CHUNK) {
      await boss.insert("bench", specs(i, Math.min(CHUNK, n - i)).map((data) => ({ data })));
    }
    await boss.stop({ graceful: true });
    return;
  }
  // pg-boss's workers docs (docs/api/workers.md): n workers in this process (localConcurrency),
  // jobs fetched and settled 50 at a time (batchSize, each job its own result: perJobResults),
  // fetching again at once while batches come back full (burstWhenBatchFull), and the shortest
  // polling interval it allows.
  const pool = new pg.Pool({ ...conn, max: n });
  await boss.work(
    "bench",
    { localConcurrency: n, batchSize: 50, perJobResults: true, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 },
    async (jobs) => {
      const results = [];
      for (const job of jobs) {
        await pool.query(SINK, [String(job.data.n)]);
        results.push({ id: job.id, status: "completed" });
      }
      return results;
    },
  );
  console.log("ready");
  await new Promise((resolve) => process.once("SIGTERM", resolve));
  await boss.stop({ graceful: true, timeout: 10000 });
  await pool.end();
}

const peers = { "graphile-worker": graphileWorker, "pg-boss": pgBoss };
if (!peers[system] || !["setup", "run"].includes(mode) || !(n > 0)) {
  console.error("usage: node peers.mjs setup|run graphile-worker|pg-boss N");
  process.exit(2);
}
await peers[system]();
