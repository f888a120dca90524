// The AsyncAPI document of the WebSocket protocol (docs/asyncapi.json, served at
// /asyncapi.json) is valid AsyncAPI 3.0 by the reference parser, @asyncapi/parser, with no
// diagnostics at all. That it names every message type of the shared crate, with payloads that
// match what the server sends, is checked in Rust (server/src/http/asyncapi.rs).
// No browser here: it sits with the browser tests because they share the npm set-up.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { Parser } from "@asyncapi/parser";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/// The document parses as AsyncAPI 3.0 with no diagnostic but the note that 3.1 exists (the
/// document is 3.0 on purpose: the version most tools read), and the parser sees client
/// messages the server receives and server messages it sends.
test("docs/asyncapi.json is valid AsyncAPI 3.0", async () => {
  const text = readFileSync(path.join(REPO, "docs/asyncapi.json"), "utf8");
  const { document, diagnostics } = await new Parser().parse(text);
  const shown = diagnostics
    .filter((d) => d.code !== "asyncapi-latest-version")
    .map((d) => `${d.severity} ${d.code} ${d.path.join(".")}: ${d.message}`);
  assert.deepEqual(shown, [], "diagnostics");
  assert.ok(document, "no document");
  assert.equal(document.version(), "3.0.0");
  const receives = document.operations().filterByReceive().flatMap((o) => o.messages().all());
  const sends = document.operations().filterBySend().flatMap((o) => o.messages().all());
  assert.ok(receives.length >= 5, `${receives.length} client messages`);
  assert.ok(sends.length >= 4, `${sends.length} server messages`);
});
