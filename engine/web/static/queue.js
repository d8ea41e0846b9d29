// The annotation queue's keyboard: each button or link with data-key="k" is pressed by
// the key k (y / n for pass / fail, 1-9 for levels, s to skip), unless typing in a field.
(function () {
  "use strict";
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && (target.tagName === "INPUT" || target.tagName === "SELECT" || target.tagName === "TEXTAREA")) return;
    var key = event.key.toLowerCase();
    var found = document.querySelector('#label-form [data-key="' + key.replace(/["\\]/g, "") + '"]');
    if (!found) return;
    event.preventDefault();
    found.click();
  });
})();
