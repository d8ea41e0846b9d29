// Live progress on the runs list and a run's page: every element with
// data-run and data-active="1" is refreshed in place from GET /ui/progress
// (the signed-in tenant's runs only) once a second, until none is active.
(function () {
  "use strict";
  var PERIOD_MS = 1000;

  function active() {
    return Array.prototype.slice.call(document.querySelectorAll('[data-run][data-active="1"]'));
  }

  function update(element, run) {
    var status = element.querySelector('[data-field="status"]');
    if (status && status.textContent !== run.status) {
      status.textContent = run.status;
      status.className = "status " + run.status;
    }
    var done = element.querySelector('[data-field="done"]');
    if (done) done.textContent = String(run.done);
    var bar = element.querySelector("progress");
    if (bar) {
      bar.max = run.total || 1;
      bar.value = run.done;
    }
    if (!run.active) {
      element.dataset.active = "0";
      var finished = document.getElementById("run-finished");
      if (finished) finished.hidden = false;
    }
  }

  function poll() {
    var elements = active();
    if (!elements.length) return;
    var query = elements.map(function (e) {
      return "run=" + encodeURIComponent(e.dataset.run);
    }).join("&");
    fetch("/ui/progress?" + query, {credentials: "same-origin", cache: "no-store"})
      .then(function (reply) {
        if (reply.status === 401) return null; // signed out: stop
        if (!reply.ok) throw new Error("HTTP " + reply.status);
        return reply.json();
      })
      .then(function (body) {
        if (!body) return;
        elements.forEach(function (element) {
          var run = body.runs[element.dataset.run];
          if (run) update(element, run);
        });
        setTimeout(poll, PERIOD_MS);
      })
      .catch(function () {
        setTimeout(poll, PERIOD_MS * 5); // server restarting or signed out: slow down
      });
  }

  if (active().length) setTimeout(poll, PERIOD_MS);
})();
