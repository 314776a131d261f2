// Live updates: the server sends, as server-sent events, the jobs that changed; a page that
// shows one of them reloads its live part (#live) with htmx. A page says which jobs it shows
// with data-jobs on #live ("*": any job, e.g. a list whose membership may change).
(function () {
  "use strict";
  var pending = null;

  function shown() {
    var live = document.getElementById("live");
    if (!live) return null;
    var jobs = live.getAttribute("data-jobs") || "";
    return jobs === "*" ? "*" : jobs.split(" ").filter(Boolean);
  }

  function reload() {
    pending = null;
    var live = document.getElementById("live");
    if (!live || document.querySelector("#live :focus")) return; // never under the typing hand
    htmx.ajax("GET", window.location.href, { target: "#live", select: "#live", swap: "outerHTML" });
  }

  function heard(event) {
    var update = JSON.parse(event.data);
    var jobs = shown();
    if (jobs === null) return;
    var hit = update.reload || jobs === "*" ||
      (update.jobs || []).some(function (j) { return jobs.indexOf(j.id) >= 0; });
    if (hit && pending === null) pending = setTimeout(reload, 50);
  }

  if (window.EventSource && document.getElementById("live")) {
    var source = new EventSource("/events");
    source.onmessage = heard;
    document.body.setAttribute("data-live", "connecting");
    source.onopen = function () { document.body.setAttribute("data-live", "open"); };
  }
})();
