// The check editor validates as you type (POST /ui/checks/validate, the same
// validator as /v1/checks/validate) and lists each issue with its line.
(function () {
  "use strict";
  var form = document.getElementById("editor");
  if (!form) return;
  var source = document.getElementById("source");
  var list = document.getElementById("issues");
  var validity = document.getElementById("validity");
  var timer = null;
  var sequence = 0;

  function render(report) {
    list.textContent = "";
    (report.issues || []).forEach(function (issue) {
      var item = document.createElement("li");
      var where = issue.line ? "Line " + issue.line + (issue.col ? ", column " + issue.col : "") + ": " : "";
      item.textContent = where + issue.message;
      item.className = issue.severity || "error";
      list.appendChild(item);
    });
    validity.textContent = report.valid ? "Valid" : "Not valid";
  }

  function validate() {
    var mine = ++sequence;
    fetch("/ui/checks/validate", {
      method: "POST",
      credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRF-Token": form.dataset.csrf},
      body: JSON.stringify({name: form.elements.name.value || "check", source: source.value})
    }).then(function (reply) { return reply.json(); }).then(function (report) {
      if (mine === sequence) render(report);
    });
  }

  source.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(validate, 300);
  });
  validate();
})();
