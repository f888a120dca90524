// Security headers on every HTML page, checked in headless Chromium: each page (`/`, `/play`,
// `/admin` and the same files by name) carries a strict Content-Security-Policy, X-Frame-Options
// DENY, nosniff and a Referrer-Policy; each still loads its script, styles and WebAssembly and
// reaches the server with no CSP violation; and `/admin` framed by another page stays empty.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { describe, test } from "node:test";

import { ADMIN_TOKEN, newPage, putBoard, useStackAndBrowser, waitConnState, withDiagnostics } from "./harness.mjs";

const PAGES = ["/", "/play", "/admin", "/index.html", "/play.html", "/admin.html"];

describe("security headers", { timeout: 120_000 }, () => {
  let page;
  let framer;
  const env = useStackAndBrowser({
    afterStart: ({ stack }) => putBoard(stack.base, "demo"),
    beforeStop: () => new Promise((r) => (framer ? framer.close(r) : r())),
  });
  const diag = () => ({ stack: env.stack, pages: [page] });

  /// Every page answers with the four headers, and the policy is the strict one: scripts from
  /// this origin only (no 'unsafe-inline', no 'unsafe-eval'), WebAssembly allowed, no framing.
  test("every HTML page carries the security headers", async () => {
    for (const path of PAGES) {
      const res = await fetch(env.stack.base + path);
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get("content-type"), /^text\/html/, path);
      const csp = res.headers.get("content-security-policy") ?? "";
      const directives = Object.fromEntries(
        csp.split(";").map((d) => {
          const [name, ...values] = d.trim().split(/\s+/);
          return [name, values];
        }),
      );
      assert.deepEqual(directives["default-src"], ["'none'"], `${path}: ${csp}`);
      assert.deepEqual(directives["script-src"], ["'self'", "'wasm-unsafe-eval'"], `${path}: ${csp}`);
      assert.deepEqual(directives["style-src"], ["'self'"], `${path}: ${csp}`);
      assert.deepEqual(directives["frame-ancestors"], ["'none'"], `${path}: ${csp}`);
      assert.ok(!/unsafe-inline|'unsafe-eval'/.test(csp), `${path}: ${csp}`);
      assert.equal(res.headers.get("x-frame-options"), "DENY", path);
      assert.equal(res.headers.get("x-content-type-options"), "nosniff", path);
      assert.equal(res.headers.get("referrer-policy"), "no-referrer", path);
    }
  });

  /// Under that policy each page still works: its module script runs, the console signs in over
  /// fetch, each page opens its live WebSocket (through the SDK's WebAssembly), and Chromium
  /// reports no CSP violation on any page.
  test("the pages still work under the policy", async () => {
    await withDiagnostics(diag, async () => {
      for (const path of PAGES) {
        page = await newPage(env.browser);
        await page.addInitScript(() => {
          window.__violations = [];
          document.addEventListener("securitypolicyviolation", (e) =>
            window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`),
          );
        });
        const url = path.startsWith("/play") ? `${env.stack.base}${path}?board=demo` : `${env.stack.base}${path}`;
        await page.goto(url);
        if (path.startsWith("/admin")) {
          // The console signs in with fetch, then opens its live connection.
          await page.fill("#token", ADMIN_TOKEN);
          await page.click("#login-form button[type=submit]");
          await page.waitForSelector("#console:not([hidden])");
        }
        // An open connection means the SDK's WebAssembly was compiled (it encodes `hello`).
        await waitConnState(page, "open");
        const violations = await page.evaluate(() => window.__violations);
        assert.deepEqual(violations, [], `${path}: ${page.consoleLog.join("\n")}`);
        const refused = page.consoleLog.filter((l) => /Content Security Policy|Refused to/.test(l));
        assert.deepEqual(refused, [], path);
        await page.context().close();
      }
    });
  });

  /// A page of another origin that frames /admin gets an empty frame: once the frame has
  /// finished loading, the console's document is not in it (its sign-in form is not there), and
  /// Chromium says that frame-ancestors refused it.
  test("/admin cannot be framed", async () => {
    framer = createServer((req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(
        `<!doctype html><title>framing</title>` +
          `<iframe id="f" src="${env.stack.base}/admin" onload="document.title='loaded'"></iframe>`,
      );
    });
    await new Promise((r) => framer.listen(0, "127.0.0.1", r));
    const framerUrl = `http://127.0.0.1:${framer.address().port}/`;
    await withDiagnostics(diag, async () => {
      page = await newPage(env.browser);
      const adminResponse = page.waitForResponse((r) => r.url().endsWith("/admin"));
      await page.goto(framerUrl);
      // The server did answer the frame's request; the browser then finished the frame.
      assert.equal((await adminResponse).status(), 200);
      await page.waitForFunction(() => document.title === "loaded", null, { timeout: 10_000 });
      const frame = await (await page.$("#f")).contentFrame();
      const rendered = frame ? await frame.$("#login-form").catch(() => null) : null;
      assert.equal(rendered, null, `the console rendered inside a frame (${frame?.url()})`);
      assert.ok(
        page.consoleLog.some((l) => l.includes("frame-ancestors")),
        `no frame-ancestors refusal in\n${page.consoleLog.join("\n")}`,
      );
    });
  });
});
