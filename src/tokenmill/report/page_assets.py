"""The page's inline style sheet and its two scripts (an error hook and a chart audit): no file is fetched."""

CSS = """
:root { --fg:#1d2430; --muted:#5b6575; --line:#dde2ea; --bg:#f4f6f9; --card:#fff; --accent:#2f6db5;
        --bad:#b5473a; --ok:#2e7d46; --chip:#eef2f7; }
* { box-sizing: border-box; }
body { margin:0; color:var(--fg); background:var(--bg);
       font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","DejaVu Sans",sans-serif; }
header { background:#1f2d3d; color:#fff; padding:18px 32px 14px; }
header h1 { margin:0 0 4px; font-size:22px; font-weight:650; }
header .sub { color:#c6d0dc; font-size:13px; overflow-wrap:anywhere; }
nav { position:sticky; top:0; z-index:2; background:#fff; border-bottom:1px solid var(--line);
      padding:7px 32px; display:flex; gap:18px; flex-wrap:wrap; font-size:13px; }
nav a { color:var(--accent); text-decoration:none; } nav a:hover { text-decoration:underline; }
main { max-width:1180px; margin:0 auto; padding:6px 22px 40px; }
section { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:14px 22px 18px;
          margin:16px 0; }
h2 { font-size:20px; margin:2px 0 10px; } h3 { font-size:16px; margin:20px 0 6px; }
h4 { font-size:14px; margin:14px 0 4px; color:#334; }
p { margin:6px 0; } .muted { color:var(--muted); } .small { font-size:12px; }
.facts { display:grid; grid-template-columns:repeat(auto-fill,minmax(210px,1fr)); gap:10px; margin:8px 0 4px; }
.fact { border:1px solid var(--line); border-radius:6px; padding:7px 12px; min-width:0; }
.fact .label { color:var(--muted); font-size:12px; }
.fact .value { font-size:16px; font-weight:600; overflow-wrap:anywhere; }
table { border-collapse:collapse; width:100%; margin:6px 0 10px; font-size:13px; }
th, td { border-bottom:1px solid var(--line); padding:4px 8px; text-align:left; vertical-align:top; }
th { background:#f7f9fb; font-weight:600; white-space:nowrap; }
td.n, th.n { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
figure.chart { margin:8px 0 12px; } figure.chart svg { display:block; width:100%; height:auto; }
.row { display:flex; gap:18px; flex-wrap:wrap; } .row > .col { flex:1 1 340px; min-width:0; }
.text { font-family:ui-monospace,"DejaVu Sans Mono",monospace; font-size:12px; white-space:pre-wrap;
        overflow-wrap:anywhere; }
code.tok { background:var(--chip); border-radius:3px; padding:0 3px; white-space:pre; }
.ok { color:var(--ok); font-weight:600; } .bad { color:var(--bad); font-weight:600; }
.note { background:#fff8e6; border:1px solid #f0dca8; border-radius:6px; padding:6px 10px; margin:8px 0; }
.problems { color:var(--bad); }
details { margin:6px 0; } details > summary { cursor:pointer; color:var(--accent); }
pre.json { background:#f7f9fb; border:1px solid var(--line); border-radius:6px; padding:8px; font-size:12px;
           max-height:360px; overflow:auto; }
#report-errors { color:#fff; background:var(--bad); padding:8px 32px; white-space:pre-wrap; }
footer { text-align:center; color:var(--muted); font-size:12px; padding:0 0 28px; }
"""


ERROR_HOOK = """
(function () {
  var seen = [];
  function note(message) {
    seen.push(String(message));
    document.documentElement.setAttribute("data-errors", String(seen.length));
    var box = document.getElementById("report-errors");
    if (box) { box.hidden = false; box.textContent = "Script errors:\\n" + seen.join("\\n"); }
  }
  window.addEventListener("error", function (e) { note(e.message || "error"); });
  var original = console.error;
  console.error = function () {
    note(Array.prototype.join.call(arguments, " "));
    return original.apply(console, arguments);
  };
  document.documentElement.setAttribute("data-errors", "0");
})();
"""


AUDIT = """
(function () {
  function audit() {
    var charts = document.querySelectorAll("figure.chart"), rendered = 0;
    charts.forEach(function (figure) {
      var svg = figure.querySelector("svg"), box = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
      figure.setAttribute("data-rendered", Math.round(box.width) + "x" + Math.round(box.height));
      if (box.width > 0 && box.height > 0) { rendered += 1; }
    });
    document.documentElement.setAttribute("data-charts", String(charts.length));
    document.documentElement.setAttribute("data-charts-rendered", String(rendered));
  }
  if (document.readyState === "complete") { audit(); } else { window.addEventListener("load", audit); }
})();
"""

