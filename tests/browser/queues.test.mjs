// The queue browser (`/queues.html`) in headless Chromium at 1280x800 and 390x844: enqueue a job
// through the page and see it ready (its payload shown as text, never as HTML), a job nacked
// until dead shows its reason and attempt history with UTC times, retry it, purge a state,
// delete a job — each destructive action does nothing on its first click (the queue's Redis keys
// are unchanged) and runs on the second, its result next to the button — and no horizontal
// scroll at 390 px. Its screenshot is docs/queues-console.png (`docScreenshot` in harness.mjs).

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ADMIN_TOKEN, admin, docScreenshot, dumpKeys, newPage, useStackAndBrowser, withDiagnostics } from "./harness.mjs";

const Q = "bq";
const B = `/admin/queues/${Q}`;

/** The queue's own keys and their contents (the server's other keys may change on their own). */
async function queueKeys(env) {
  return (await dumpKeys(env.stack.redis.port)).filter(([k]) => k.startsWith(`q:{${Q}}:`));
}

/** Claims the best ready job and nacks it at once with `reason` (back to ready, or dead). */
async function failOnce(base, reason) {
  const c = await admin(base, "POST", `${B}/claim?lease_ms=30000`);
  await admin(base, "POST", `${B}/jobs/${c.job.id}/nack`, { token: c.lease.token, delay_ms: 0, reason });
  return c.job.id;
}

async function signIn(page, base) {
  const res = await page.goto(`${base}/queues.html`);
  assert.equal(res.status(), 200);
  assert.match(res.headers()["content-security-policy"] ?? "", /script-src 'self' 'wasm-unsafe-eval';/);
  await page.fill("#token", ADMIN_TOKEN);
  await page.click("#login-form button[type=submit]");
  await page.waitForSelector("#console:not([hidden])");
}

async function noHorizontalScroll(page, what) {
  const [scroll, client] = await page.evaluate(() => [
    document.documentElement.scrollWidth,
    document.documentElement.clientWidth,
  ]);
  assert.ok(scroll <= client, `${what}: no horizontal scroll (scrollWidth ${scroll} > clientWidth ${client})`);
}

describe("queue browser", { timeout: 120_000 }, () => {
  const env = useStackAndBrowser();
  let page;
  const diag = () => ({ stack: env.stack, pages: [page] });

  test("enqueue, dead letter with history, retry, purge, delete; confirmation required", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      page = await newPage(env.browser, { viewport: { width: 1280, height: 800 } });
      await signIn(page, base);

      // Enqueue through the page: it lands in ready, its payload shown as text.
      await page.fill("#eq-queue", Q);
      await page.fill("#eq-kind", "email");
      await page.fill("#eq-id", "hello");
      await page.fill("#eq-priority", "3");
      await page.fill("#eq-payload", '{"to": "<b>x</b>", "n": 12345678901234567890}');
      await page.click("#eq-submit");
      await page.waitForSelector('#jobs li[data-job="hello"]');
      assert.match(await page.textContent("#eq-msg"), /Enqueued hello/);
      assert.equal(await page.getAttribute('#states button[aria-selected="true"]', "data-state"), "ready");
      const pre = await page.textContent('#jobs li[data-job="hello"] pre');
      assert.match(pre, /<b>x<\/b>/, "the payload's markup is shown as text");
      assert.match(pre, /12345678901234567890/, "a big integer is shown as stored");
      assert.equal(await page.$$eval('#jobs li[data-job="hello"] b', (bs) => bs.length), 0, "and never parsed as HTML");
      const api = await admin(base, "GET", `${B}/jobs?state=ready`);
      assert.deepEqual(
        api.jobs.map((j) => [j.id, j.priority]),
        [["hello", 3]],
      );

      // A job nacked until dead shows its reason and attempt history, times in UTC.
      await admin(base, "POST", `${B}/jobs`, { id: "doomed", kind: "email", priority: 0, max_attempts: 2, payload: { to: "y" } });
      assert.equal(await failOnce(base, "smtp timeout"), "doomed");
      assert.equal(await failOnce(base, "still down"), "doomed");
      await page.click("#refresh");
      await page.click('#states button[data-state="dead"]');
      const dead = '#jobs li[data-job="doomed"]';
      await page.waitForSelector(dead);
      assert.match(await page.textContent(`${dead} .reason`), /still down/);
      const history = await page.$$eval(`${dead} .history li`, (lis) => lis.map((li) => li.textContent));
      assert.equal(history.length, 2, JSON.stringify(history));
      assert.match(history[0], /attempt 1 .*UTC.*smtp timeout/);
      assert.match(history[1], /attempt 2 .*UTC.*still down/);
      assert.match(await page.textContent(`${dead} .when`), /^died \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
      await docScreenshot(page, "queues-console", { fullPage: false });

      // Retry: one click arms the button and changes nothing; the second retries.
      let before = await queueKeys(env);
      await page.click(`${dead} button.retry`);
      assert.equal(await page.textContent(`${dead} button.retry`), "Confirm retry");
      assert.deepEqual(await queueKeys(env), before, "one click on Retry changed nothing");
      await page.click(`${dead} button.retry`);
      await page.waitForFunction((sel) => /Retried/.test(document.querySelector(sel)?.textContent ?? ""), `${dead} .msg`);
      let counts = await admin(base, "GET", B);
      assert.deepEqual(counts, { ready: 2, delayed: 0, processing: 0, dead: 0 });

      // Purge ready: one click does nothing; the second deletes both, and the page says so.
      await page.click('#states button[data-state="ready"]');
      await page.waitForSelector('#jobs li[data-job="doomed"]');
      before = await queueKeys(env);
      await page.click("#purge");
      assert.equal(await page.textContent("#purge"), "Confirm purge ready");
      assert.deepEqual(await queueKeys(env), before, "one click on Purge changed nothing");
      await page.click("#purge");
      await page.waitForFunction(() => /Purged 2 ready jobs/.test(document.getElementById("bulk-msg").textContent));
      await page.waitForSelector("#empty:not([hidden])");
      assert.equal(await page.textContent("#empty"), "No ready jobs");
      counts = await admin(base, "GET", B);
      assert.deepEqual(counts, { ready: 0, delayed: 0, processing: 0, dead: 0 });

      // Delete one job: again two clicks.
      await admin(base, "POST", `${B}/jobs`, { id: "tmp", kind: "email" });
      await page.click("#refresh");
      const tmp = '#jobs li[data-job="tmp"]';
      await page.waitForSelector(tmp);
      before = await queueKeys(env);
      await page.click(`${tmp} button.delete`);
      assert.deepEqual(await queueKeys(env), before, "one click on Delete changed nothing");
      await page.click(`${tmp} button.delete`);
      await page.waitForFunction((sel) => /Deleted tmp/.test(document.querySelector(sel)?.textContent ?? ""), `${tmp} .msg`);
      counts = await admin(base, "GET", B);
      assert.equal(counts.ready, 0);
      assert.deepEqual(page.consoleLog, [], "no console errors (CSP violations included)");
    }));

  test("at 390x844 the page has no horizontal scroll", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      await admin(base, "POST", `${B}/jobs`, {
        id: "wide",
        kind: "email",
        priority: 0,
        max_attempts: 1,
        payload: { long: "x".repeat(300), nested: { a: [1, 2, 3], b: "y".repeat(120) } },
      });
      await failOnce(base, "a long reason ".repeat(20));
      page = await newPage(env.browser, { viewport: { width: 390, height: 844 } });
      await signIn(page, base);
      await noHorizontalScroll(page, "signed in");
      await page.click(`#queues li[data-queue="${Q}"] button`);
      await page.click('#states button[data-state="dead"]');
      await page.waitForSelector('#jobs li[data-job="wide"]');
      await noHorizontalScroll(page, "a dead job with a long payload and reason");
      await page.click('#states button[data-state="processing"]');
      await page.waitForSelector("#empty:not([hidden])");
      assert.equal(await page.textContent("#empty"), "No processing jobs");
      await noHorizontalScroll(page, "an empty state");
      assert.deepEqual(page.consoleLog, [], "no console errors (CSP violations included)");
    }));
});
