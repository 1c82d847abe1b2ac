/* The task card's copy buttons (templates/tracker/partials/task_summary.html): a button with
   data-copy="<id>" copies that element's text. The text also goes into the card's hidden text area
   (#summary-clipboard) and the button's data-copied-text, so it can be pasted by hand where the
   browser refuses the clipboard (a page served over plain http from another host). No dependency. */
(function () {
  "use strict";

  function fallbackCopy(area) {
    area.select();
    try { return document.execCommand("copy"); } catch (e) { return false; }
  }

  function copied(button) {
    var label = button.textContent;
    button.textContent = button.dataset.copied || "Copied";
    button.classList.add("done");
    window.setTimeout(function () { button.textContent = label; button.classList.remove("done"); }, 1500);
  }

  function copy(button) {
    var source = document.getElementById(button.dataset.copy);
    if (!source) { return; }
    var text = source.textContent;
    var area = document.getElementById("summary-clipboard");
    if (area) { area.value = text; }
    button.dataset.copiedText = text;
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { copied(button); }, function () {
        if (area && fallbackCopy(area)) { copied(button); }
      });
    } else if (area && fallbackCopy(area)) {
      copied(button);
    }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button.copy[data-copy]");
    if (button) { event.preventDefault(); copy(button); }
  });
})();
