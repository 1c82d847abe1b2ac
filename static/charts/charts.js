// Draw every server-built figure on the page with the bundled plotly.js.
// A figure lives in <script type="application/json" id="X-data"> next to <div class="plotly-figure" data-figure="X-data">.
(function () {
  function draw(div) {
    var source = document.getElementById(div.dataset.figure);
    if (!source) { return; }
    var fig = JSON.parse(source.textContent);
    var config = {responsive: true, displaylogo: false};
    Plotly.newPlot(div, fig.data, fig.layout || {}, config).then(function () {
      var points = 0;
      fig.data.forEach(function (trace) {
        var series = trace.z || trace.x || trace.y || [];
        series.forEach(function (row) { points += Array.isArray(row) ? row.filter(function (v) { return v !== null; }).length : 1; });
      });
      div.dataset.points = String(points);
      div.dataset.ready = "1";
    });
    if (div.dataset.clickTask) {
      // Heatmap cells carry the task number in customdata[0]: a click opens that task.
      div.on("plotly_click", function (event) {
        var point = event.points && event.points[0];
        if (point && point.customdata && point.customdata[0]) {
          window.location.href = "/tasks/" + point.customdata[0];
        }
      });
    }
  }
  function drawAll() { document.querySelectorAll(".plotly-figure").forEach(draw); }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", drawAll); } else { drawAll(); }
})();
