// report.html's first script: any error of a later script (or one it raised and did not
// catch) is written into the page as text, so a broken report says so on screen and a
// test reading the page from a browser finds it (element .sw-error).
(function () {
  function show(text) {
    var box = document.createElement("pre");
    box.className = "sw-error";
    box.textContent = "report script error: " + text;
    (document.body || document.documentElement).appendChild(box);
  }
  window.addEventListener("error", function (e) {
    show((e.message || "error") + (e.filename ? " (" + e.filename + ":" + e.lineno + ")" : ""));
  });
  window.addEventListener("unhandledrejection", function (e) { show(String(e.reason)); });
})();
