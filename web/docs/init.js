// The API page (/docs): Swagger UI, from the vendored npm package swagger-ui-dist
// (web/docs/vendor), on this server's own OpenAPI document. In a file of its own because the
// page's Content-Security-Policy allows no inline script.
/* global SwaggerUIBundle */
"use strict";

window.addEventListener("DOMContentLoaded", () => {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    // No badge that would send the document to an outside validator.
    validatorUrl: null,
  });
});
