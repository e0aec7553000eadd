// The API docs page's start-up, a file of its own so the page needs no inline script
// (the Content-Security-Policy allows none). FastAPI's default page does the same inline.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.dataset.openapi,
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    presets: [SwaggerUIBundle.presets.apis],
    validatorUrl: null,  // its default badge is fetched from another host
  });
})();
