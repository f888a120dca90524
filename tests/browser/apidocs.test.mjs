// The API page (/docs) in headless Chromium: Swagger UI, served by Scorecast itself from the
// vendored npm package, renders the server's own /openapi.json under the page's strict
// Content-Security-Policy, lists every operation of the document, shows an operation's error
// responses, and loads nothing from another origin. Also: /openapi.json is valid OpenAPI 3.1,
// /asyncapi.json is docs/asyncapi.json, and the vendored Swagger UI files are those of the pinned
// npm package, byte for byte.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";

import SwaggerParser from "@apidevtools/swagger-parser";

import { REPO, WEB_DIR, get, newPage, screenshot, useStackAndBrowser, withDiagnostics } from "./harness.mjs";

const METHODS = ["get", "put", "post", "delete", "patch"];

describe("API page", { timeout: 120_000 }, () => {
  const env = useStackAndBrowser();
  let page;
  const diag = () => ({ stack: env.stack, pages: [page] });

  /// /docs renders every operation of /openapi.json, with the error responses of one opened,
  /// with no CSP violation, no page error and no request to another origin.
  test("/docs lists the API's operations, offline, under a strict CSP", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      const { status, body: spec } = await get(base, "/openapi.json");
      assert.equal(status, 200);
      const want = [];
      for (const [p, item] of Object.entries(spec.paths)) {
        for (const m of METHODS) if (item[m]) want.push(`${m.toUpperCase()} ${p}`);
      }
      assert.ok(want.length > 25, `${want.length} operations in the document`);

      page = await newPage(env.browser, { viewport: { width: 1280, height: 900 } });
      await page.addInitScript(() => {
        window.cspViolations = [];
        document.addEventListener("securitypolicyviolation", (e) =>
          window.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`),
        );
      });
      const origins = new Set();
      page.on("request", (r) => origins.add(new URL(r.url()).origin));

      const res = await page.goto(`${base}/docs`);
      assert.equal(res.status(), 200);
      assert.match(res.headers()["content-type"], /^text\/html/);
      await page.waitForSelector(".opblock .opblock-summary-path", { timeout: 30_000 });
      await page.waitForFunction((n) => document.querySelectorAll(".opblock").length >= n, want.length, {
        timeout: 30_000,
      });
      const shown = await page.$$eval(".opblock", (blocks) =>
        blocks.map((b) => {
          const method = b.querySelector(".opblock-summary-method")?.textContent.trim();
          const p = b.querySelector(".opblock-summary-path")?.getAttribute("data-path");
          return `${method} ${p}`;
        }),
      );
      assert.deepEqual([...shown].sort(), [...want].sort());

      // One operation opened: its documented error statuses are listed.
      const top = page.locator(".opblock", { has: page.locator('[data-path="/v1/boards/{board}/top"]') });
      await top.locator(".opblock-summary-control").click();
      const codes = () => top.locator(".responses-table .response-col_status").allTextContents();
      await page.waitForFunction(
        () => document.querySelectorAll(".responses-table .response-col_status").length > 0,
      );
      const statuses = (await codes()).map((s) => s.trim());
      for (const s of ["200", "400", "404", "429", "503"]) assert.ok(statuses.includes(s), `${s} in ${statuses}`);
      await screenshot(page, "api-docs");

      assert.deepEqual(await page.evaluate(() => window.cspViolations), [], "CSP violations");
      const errors = page.consoleLog.filter((l) => l.startsWith("[pageerror]") || l.includes("Content Security Policy"));
      assert.deepEqual(errors, []);
      assert.deepEqual([...origins], [new URL(base).origin], "every request goes to the server itself");
    }));

  /// The served OpenAPI document, with the error bodies and bounds added to what utoipa
  /// generates, is valid OpenAPI 3.1 by @apidevtools/swagger-parser (schema and references).
  test("/openapi.json is valid OpenAPI 3.1", () =>
    withDiagnostics(diag, async () => {
      const { status, body } = await get(env.stack.base, "/openapi.json");
      assert.equal(status, 200);
      assert.equal(body.openapi, "3.1.0");
      const api = await SwaggerParser.validate(structuredClone(body));
      assert.equal(api.info.title, "Scorecast");
    }));

  /// The AsyncAPI document the server serves is the one in docs/.
  test("/asyncapi.json is docs/asyncapi.json", () =>
    withDiagnostics(diag, async () => {
      const { status, body } = await get(env.stack.base, "/asyncapi.json");
      assert.equal(status, 200);
      assert.deepEqual(body, JSON.parse(readFileSync(path.join(REPO, "docs/asyncapi.json"), "utf8")));
      assert.equal(body.asyncapi, "3.0.0");
    }));
});

/// The vendored files are exactly those of the npm package pinned in package.json (installed
/// from package-lock.json, integrity-checked by npm): no hand edits, no drift on an upgrade.
test("web/docs/vendor holds the pinned swagger-ui-dist, unchanged", () => {
  const pkg = path.join(REPO, "tests/browser/node_modules/swagger-ui-dist");
  const pinned = JSON.parse(readFileSync(path.join(REPO, "tests/browser/package.json"), "utf8")).dependencies[
    "swagger-ui-dist"
  ];
  assert.equal(JSON.parse(readFileSync(path.join(pkg, "package.json"), "utf8")).version, pinned);
  for (const f of ["swagger-ui-bundle.js", "swagger-ui-bundle.js.LICENSE.txt", "swagger-ui.css", "LICENSE", "NOTICE"]) {
    const vendored = readFileSync(path.join(WEB_DIR, "docs/vendor", f));
    assert.ok(vendored.equals(readFileSync(path.join(pkg, f))), `web/docs/vendor/${f} differs from swagger-ui-dist ${pinned}`);
  }
});
