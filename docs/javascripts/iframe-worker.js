/* The site's search, opened from disk (file://). The search of mkdocs-material runs in a web worker,
   and a page read from disk may not start one (its script has no origin the page shares). The
   offline plugin inlines the search index (search/search_index.js); this shim, loaded before the
   theme's scripts, stands in for Worker on file:// pages only: the worker's script runs in a hidden
   iframe, and messages go between the page and the iframe by postMessage. It plays the part of the
   iframe-worker shim the offline plugin would otherwise load from the internet (its name contains
   "iframe-worker", so the plugin adds no address of its own). Served over http(s), it does nothing. */
(function () {
  "use strict";
  if (location.protocol !== "file:" || !window.Worker) return;

  function FileWorker(url) {
    var target = document.createDocumentFragment();   // an EventTarget for the page's listeners
    var self = this, queue = [], ready = false;
    this.addEventListener = target.addEventListener.bind(target);
    this.removeEventListener = target.removeEventListener.bind(target);
    this.dispatchEvent = target.dispatchEvent.bind(target);
    this.onmessage = null;
    this.onerror = null;

    var frame = document.createElement("iframe");
    frame.setAttribute("aria-hidden", "true");
    frame.tabIndex = -1;
    frame.style.cssText = "position:absolute;width:0;height:0;border:0;visibility:hidden";
    var src = new URL(url, location.href).href;
    // in the iframe, the worker's postMessage(data) (one argument) goes to the page; the page's
    // postMessage(data, "*") (two) reaches the worker's message listeners as in a worker
    frame.srcdoc = "<!doctype html><script>(function () { var own = window.postMessage;" +
      " window.postMessage = function (data, origin, transfer) {" +
      "  if (arguments.length > 1) return own.apply(window, arguments);" +
      "  parent.postMessage({ __fileWorker: true, data: data }, '*'); };" +
      " window.importScripts = function () { throw new Error('importScripts is not available offline'); };" +
      "})();<\/script><script src=\"" + src.replace(/"/g, "&quot;") + "\"><\/script>";

    window.addEventListener("message", function (event) {
      if (event.source !== frame.contentWindow || !event.data || event.data.__fileWorker !== true) return;
      var message = new MessageEvent("message", { data: event.data.data });
      if (typeof self.onmessage === "function") self.onmessage(message);
      target.dispatchEvent(message);
    });
    frame.addEventListener("load", function () {
      ready = true;
      queue.splice(0).forEach(function (data) { frame.contentWindow.postMessage(data, "*"); });
    });
    this.postMessage = function (data) {
      if (ready) frame.contentWindow.postMessage(data, "*");
      else queue.push(data);
    };
    this.terminate = function () { frame.remove(); };
    (document.body || document.documentElement).appendChild(frame);
  }

  window.Worker = FileWorker;
})();
