// Corral's own page behaviour, on top of htmx: Enter sends, Shift+Enter breaks the line;
// live output scrolls to its newest line; a reconnecting stream resumes after the last row
// it showed; the chat follows new rows while the reader is at the bottom and shows a "new
// messages" marker when not; an action's error appears next to where the person acted (a
// failed send keeps its text); an approval note survives a reload; the header's "waiting
// for you" list follows the page's live rows and keeps itself open.
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

  // Following the chat: at the bottom before a row or token arrives, at the bottom after it.
  var FOLLOW_SLACK = 48;
  var following = true;
  function atBottom() {
    var page = document.scrollingElement || document.documentElement;
    return page.scrollHeight - (page.scrollTop + window.innerHeight) <= FOLLOW_SLACK;
  }
  function marker() {
    var found = document.getElementById("new-messages");
    var composer = document.getElementById("composer");
    if (found || !composer) { return found; }
    found = document.createElement("button");
    found.type = "button";
    found.id = "new-messages";
    found.className = "new-messages";
    found.hidden = true;
    found.textContent = "New messages ↓";
    found.addEventListener("click", function () {
      found.hidden = true;
      window.scrollTo(0, document.documentElement.scrollHeight);
    });
    composer.prepend(found);
    return found;
  }
  document.addEventListener("htmx:sseBeforeMessage", function () {
    following = atBottom();
  });
  window.addEventListener("scroll", function () {
    var found = document.getElementById("new-messages");
    if (found && !found.hidden && atBottom()) { found.hidden = true; }
  }, { passive: true });

  document.addEventListener("htmx:sseMessage", function (evt) {
    if (document.getElementById("composer") && evt.detail && evt.detail.type !== "claim") {
      if (following) {
        window.scrollTo(0, document.documentElement.scrollHeight);
      } else {
        var shown = marker();
        if (shown) { shown.hidden = false; }
      }
    }
    var source = evt.detail && evt.detail.target;
    if (source && source.url && evt.detail.lastEventId) {
      lastSeq[streamKey(source.url.replace(location.origin, ""))] = evt.detail.lastEventId;
    }
    if (evt.detail && (evt.detail.type === "row" || evt.detail.type === "status")) {
      // What waits for the person may have changed: the header's list reads it again.
      htmx.trigger(document.body, "corral:waiting");
    }
    if (evt.detail && evt.detail.type === "row") {
      var chat = document.getElementById("chat");
      if (chat && evt.detail.lastEventId) { chat.dataset.seq = evt.detail.lastEventId; }
    }
    document.querySelectorAll("pre.output.live, pre.output.tail").forEach(function (pre) {
      pre.scrollTop = pre.scrollHeight;
    });
  });

  // The header's waiting list, read again every few seconds, stays open if it was.
  document.addEventListener("htmx:beforeSwap", function (evt) {
    var target = evt.detail.target;
    if (target && target.id === "waiting-for-you") {
      var shown = target.querySelector("details");
      target.dataset.open = shown && shown.open ? "1" : "";
    }
  });
  document.addEventListener("htmx:afterSwap", function (evt) {
    var target = evt.detail.target;
    if (target && target.id === "waiting-for-you" && target.dataset.open) {
      var shown = target.querySelector("details");
      if (shown) { shown.open = true; }
    }
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

  // Where an action's answer belongs: right after the form (or button) the person used.
  function actedOn(elt) {
    return (elt && elt.closest && elt.closest("form")) || elt;
  }
  // The composer shows its error inside itself, above the text, where the sticky bar is seen.
  function errorAfter(anchor, create) {
    var inside = anchor.id === "composer";
    var next = inside ? anchor.querySelector(":scope > .action-error") : anchor.nextElementSibling;
    if (next && next.classList.contains("action-error")) { return next; }
    if (!create) { return null; }
    var box = document.createElement("div");
    box.className = "action-error";
    box.setAttribute("role", "alert");
    if (inside) { anchor.prepend(box); } else { anchor.after(box); }
    return box;
  }

  document.addEventListener("htmx:afterRequest", function (evt) {
    var xhr = evt.detail.xhr;
    var failed = !xhr || xhr.status === 0 || xhr.status >= 400;
    var anchor = actedOn(evt.detail.elt);
    if (failed) {
      if (xhr && xhr.status === 0 && anchor) {
        errorAfter(anchor, true).textContent =
          "The server could not be reached: check the connection and try again.";
      }
      return;  // a failed send keeps its text
    }
    if (evt.detail.elt.id === "composer") { evt.detail.elt.reset(); }
    var shown = anchor && errorAfter(anchor, false);
    if (shown) { shown.remove(); }
  });

  document.addEventListener("htmx:beforeSwap", function (evt) {
    var xhr = evt.detail.xhr;
    if (!xhr || xhr.status < 400) { return; }
    evt.detail.shouldSwap = false;
    var anchor = actedOn(evt.detail.requestConfig ? evt.detail.requestConfig.elt : evt.detail.elt);
    if (anchor) {
      // The server's error fragment: a message it escaped.
      errorAfter(anchor, true).innerHTML = xhr.responseText;
    }
  });

  // A form with data-confirm asks before it is sent (disabling a package, for one).
  document.addEventListener("submit", function (evt) {
    var form = evt.target;
    if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      evt.preventDefault();
    }
  }, true);

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
