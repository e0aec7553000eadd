// Corral's own page behaviour, on top of htmx: Enter sends, Shift+Enter breaks the line;
// live output scrolls to its newest line; a reconnecting stream resumes after the last row
// it showed; errors from htmx requests appear in the flash area; an approval note survives
// a reload.
(function () {
  "use strict";
  var lastSeq = {};

  function streamKey(url) { return url.split("?")[0]; }

  // A stream the extension re-creates (after the server closed it) starts after the last
  // row this page already shows, so nothing is shown twice and nothing is lost.
  htmx.createEventSource = function (url) {
    var key = streamKey(url);
    if (lastSeq[key] !== undefined) {
      url = key + "?after=" + lastSeq[key];
    }
    return new EventSource(url, { withCredentials: true });
  };

  document.addEventListener("htmx:sseMessage", function (evt) {
    var source = evt.detail && evt.detail.target;
    if (source && source.url && evt.detail.lastEventId) {
      lastSeq[streamKey(source.url.replace(location.origin, ""))] = evt.detail.lastEventId;
    }
    if (evt.detail && evt.detail.type === "row") {
      var chat = document.getElementById("chat");
      if (chat && evt.detail.lastEventId) { chat.dataset.seq = evt.detail.lastEventId; }
    }
    document.querySelectorAll("pre.output.live, pre.output.tail").forEach(function (pre) {
      pre.scrollTop = pre.scrollHeight;
    });
  });

  document.addEventListener("htmx:sseOpen", function () {
    document.body.dataset.live = "open";
  });

  document.addEventListener("keydown", function (evt) {
    var box = evt.target;
    if (box.tagName !== "TEXTAREA" || box.form === null || box.form.id !== "composer") { return; }
    if (evt.key === "Enter" && !evt.shiftKey && !evt.isComposing) {
      evt.preventDefault();
      if (box.value.trim() !== "") { htmx.trigger(box.form, "submit"); }
    }
  });

  document.addEventListener("htmx:afterRequest", function (evt) {
    var form = evt.detail.elt;
    if (form.id === "composer" && evt.detail.successful) { form.reset(); }
    if (evt.detail.successful) {
      var flash = document.getElementById("flash");
      if (flash && evt.detail.xhr.status === 204) { flash.innerHTML = ""; }
    }
  });

  document.addEventListener("htmx:beforeSwap", function (evt) {
    if (evt.detail.xhr && evt.detail.xhr.status >= 400) {
      evt.detail.shouldSwap = true;
      evt.detail.isError = false;
      evt.detail.target = document.getElementById("flash");
    }
  });

  // An approval's note is kept per approval while it is typed, so a reload keeps it.
  function restoreNotes(root) {
    root.querySelectorAll("input[data-keep]").forEach(function (input) {
      var kept = sessionStorage.getItem(input.dataset.keep);
      if (kept && !input.value) { input.value = kept; }
    });
  }
  document.addEventListener("input", function (evt) {
    if (evt.target.dataset && evt.target.dataset.keep) {
      sessionStorage.setItem(evt.target.dataset.keep, evt.target.value);
    }
  });
  document.addEventListener("DOMContentLoaded", function () { restoreNotes(document); });
  document.addEventListener("htmx:load", function (evt) { restoreNotes(evt.detail.elt); });
})();
