// The BullMQ side of `cargo xtask bench -- --queues` (tests/src/bin/loadgen_queues.rs runs it,
// alternating with Scorecast, each on a redis-server of its own).
//
// env: REDIS_PORT, JOBS (20000), PRODUCERS (64), CONCURRENCY (8), CHUNK (100, addBulk size)
// Prints one JSON line: {"enqueue": jobs/s, "consume": jobs/s, "bulk": jobs/s, "done": n}
//
// 1. enqueue: PRODUCERS concurrent loops of `queue.add` (one job per call), JOBS in all;
// 2. consume: one Worker with `concurrency: CONCURRENCY` and an empty processor, from its
//    start until JOBS jobs have completed (jobs are added with removeOnComplete, so completing
//    one deletes it, as Scorecast's ack does);
// 3. bulk: PRODUCERS concurrent loops of `queue.addBulk` of CHUNK jobs, JOBS in all, on
//    another queue.
import { Queue, Worker } from 'bullmq';

const env = (k, d) => Number(process.env[k] ?? d);
const port = env('REDIS_PORT', 6379);
const JOBS = env('JOBS', 20000);
const PRODUCERS = env('PRODUCERS', 64);
const CONCURRENCY = env('CONCURRENCY', 8);
const CHUNK = env('CHUNK', 100);
const connection = { host: '127.0.0.1', port };
const opts = { removeOnComplete: true, removeOnFail: true };

async function loops(n, body) {
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    for (;;) {
      const i = next++;
      if (!(await body(i))) return;
    }
  }));
}

const q = new Queue('bench', { connection });
await q.waitUntilReady();

let t = performance.now();
await loops(PRODUCERS, async (i) => {
  if (i >= JOBS) return false;
  await q.add('work', { n: i }, opts);
  return true;
});
const enqueue = JOBS / ((performance.now() - t) / 1000);

let done = 0;
const worker = new Worker('bench', async () => {}, { connection, concurrency: CONCURRENCY, autorun: false });
await worker.waitUntilReady();
const finished = new Promise((resolve) => {
  worker.on('completed', () => {
    done += 1;
    if (done === JOBS) resolve();
  });
});
t = performance.now();
worker.run();
await finished;
const consume = JOBS / ((performance.now() - t) / 1000);
await worker.close();

const bq = new Queue('bulk', { connection });
await bq.waitUntilReady();
t = performance.now();
await loops(PRODUCERS, async (i) => {
  const from = i * CHUNK;
  if (from >= JOBS) return false;
  const jobs = [];
  for (let n = from; n < Math.min(JOBS, from + CHUNK); n++) jobs.push({ name: 'work', data: { n }, opts });
  await bq.addBulk(jobs);
  return true;
});
const bulk = JOBS / ((performance.now() - t) / 1000);

console.log(JSON.stringify({ enqueue, consume, bulk, done }));
await q.close();
await bq.close();
