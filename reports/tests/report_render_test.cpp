// The report drawn for real: gnuplot makes the charts, headless Chromium opens the page, Vega draws
// them again interactively, and the page counts the charts drawn and their ink. Each test skips
// (with the package to install) when its program is missing.

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "reports/co_design_report.h"
#include "reports/gnuplot.h"
#include "reports/tests/report_fixtures.h"
#include "reports/vega_bundle.h"

namespace coda::reports {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

#define SKIP_WITHOUT(program, package)                                                  \
  if (!test::on_path(program))                                                          \
  GTEST_SKIP() << "'" program "' is not installed; install the Debian package " package \
                  " (scripts/packages.sh lists it)"

TEST(Gnuplot, AMissingProgramNamesThePackage) {
  const GnuplotOutput out = run_gnuplot("plot x\n", milliseconds(2000), "coda-no-such-gnuplot");
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.error,
            "'coda-no-such-gnuplot' is not installed (not found on PATH); install the Debian "
            "package gnuplot-nox (apt-get install gnuplot-nox)");
}

TEST(Gnuplot, DrawsAnSvg) {
  SKIP_WITHOUT("gnuplot", "gnuplot-nox");
  const GnuplotOutput out = run_gnuplot("set terminal svg\nplot x\n", milliseconds(10000));
  ASSERT_TRUE(out.ok) << out.error;
  EXPECT_EQ(out.svg.rfind("<?xml", 0), 0U);
  EXPECT_NE(out.svg.find("</svg>"), std::string::npos);
}

TEST(Gnuplot, AScriptErrorComesBackWithGnuplotsMessage) {
  SKIP_WITHOUT("gnuplot", "gnuplot-nox");
  const GnuplotOutput out =
      run_gnuplot("set terminal svg\nplot no_such_function(x)\n", milliseconds(10000));
  EXPECT_FALSE(out.ok);
  EXPECT_NE(out.error.find("undefined function: no_such_function"), std::string::npos)
      << out.error;
}

TEST(Gnuplot, ARunPastTheTimeoutIsStopped) {
  SKIP_WITHOUT("gnuplot", "gnuplot-nox");
  const auto start = std::chrono::steady_clock::now();
  const GnuplotOutput out = run_gnuplot("pause 30\n", milliseconds(300));
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.error, "'gnuplot' ran past its 300 ms limit and was stopped");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// Records every error and warning the page logs (Vega's included) and every uncaught exception;
// put first in <head>, before the chart libraries.
constexpr std::string_view kErrorProbe = R"(<script>
window.logged = [];
for (const level of ['error', 'warn']) {
  const original = console[level];
  console[level] = function (...args) { window.logged.push(level + ': ' + args.join(' ')); original.apply(console, args); };
}
window.addEventListener('error', (e) => window.logged.push('uncaught: ' + e.message));
window.addEventListener('unhandledrejection', (e) => window.logged.push('unhandled: ' + e.reason));
</script>
)";

// After the charts have had time to draw: counts the page's charts, those drawn with a real size
// and many marks (Vega's SVG, or gnuplot's where Vega did not draw), those Vega drew, and those
// whose pixels, rasterised by Vega (view.toCanvas()), are more than 1% ink (not near-white);
// writes the counts and the page's log into the page for --dump-dom.
constexpr std::string_view kCountScript = R"(<script>
setTimeout(async function () {
  const charts = document.querySelectorAll('figure.chart');
  let drawn = 0, interactive = 0, inked = 0;
  for (const figure of charts) {
    const svg = figure.querySelector('div.plot svg');
    if (svg) {
      const box = svg.getBoundingClientRect();
      const marks = svg.querySelectorAll('path, polyline, polygon, circle, rect, use, text').length;
      if (box.width > 100 && box.height > 100 && marks >= 10) drawn++;
    }
    if (!figure.classList.contains('drawn') || !figure.vegaView) continue;
    interactive++;
    const canvas = await figure.vegaView.toCanvas();
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let ink = 0;
    for (let i = 0; i < pixels.length; i += 4)
      if (pixels[i + 3] > 0 && Math.min(pixels[i], pixels[i + 1], pixels[i + 2]) < 230) ink++;
    if (ink > 0.01 * canvas.width * canvas.height) inked++;
  }
  const out = document.createElement('div');
  out.id = 'render-check';
  out.textContent = 'charts=' + charts.length + ' drawn=' + drawn + ' interactive=' + interactive +
                    ' inked=' + inked + ' logged=' + JSON.stringify(window.logged);
  document.body.appendChild(out);
}, 3000);
</script>
)";

// The full fixture with a third objective, and a serving simulation: every kind of chart the
// report draws (scatter, the pairs of three objectives, bars, roofline, lines).
ReportInput every_chart_kind() {
  ReportInput input = test::full_input();
  input.sweep->results.objectives.emplace_back("edp");
  Diagnostics diags;
  auto served = read_serve_json(test::kServeJson, "serve.json", diags);
  if (served) input.servings.push_back({"tp2", "serve.json", std::move(*served)});
  return input;
}

TEST(ReportRender, ChromiumDrawsEveryChart) {
  SKIP_WITHOUT("gnuplot", "gnuplot-nox");
  SKIP_WITHOUT("chromium", "chromium");
  const ReportOutcome out = build_report(every_chart_kind(), [](std::string_view script) {
    return run_gnuplot(script, milliseconds(20000));
  });
  ASSERT_TRUE(out.report) << out.error;
  const std::size_t charts = out.report->charts.size();
  ASSERT_EQ(charts, 13U);  // sweep 3, each run 3, comparison 2, serving 2
  std::string html = out.report->html;
  const auto head = html.find("<head>\n");
  const auto body_end = html.rfind("</body>");
  ASSERT_NE(head, std::string::npos);
  ASSERT_NE(body_end, std::string::npos);
  html.insert(body_end, kCountScript);
  html.insert(head + 7, kErrorProbe);
  const fs::path dir = test::scratch_dir("report_render_test", "chromium");
  std::ofstream(dir / "report.html", std::ios::binary) << html;
  const fs::path dom = dir / "dom.html";
  // --no-sandbox: CI runs as root; a private profile so no other Chromium is disturbed; virtual
  // time runs the page's timers (the count waits 3 s) without waiting for them.
  const std::string command = fmt::format(
      "timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
      "--no-first-run --user-data-dir='{}' --virtual-time-budget=30000 --dump-dom 'file://{}' "
      "> '{}' 2> '{}'",
      (dir / "profile").string(), fs::absolute(dir / "report.html").string(), dom.string(),
      (dir / "chromium.log").string());
  ASSERT_EQ(std::system(command.c_str()), 0) << command << "\nsee " << (dir / "chromium.log");
  std::ifstream in(dom);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Built with the chart libraries (the default), Vega draws every chart; without them the page
  // keeps gnuplot's SVGs.
  const std::size_t vega = vega_scripts().empty() ? 0 : charts;
  EXPECT_NE(text.find(fmt::format("<div id=\"render-check\">charts={0} drawn={0} interactive={1} "
                                  "inked={1} logged=[]</div>",
                                  charts, vega)),
            std::string::npos)
      << text.substr(text.size() > 1500 ? text.size() - 1500 : 0);
}

}  // namespace
}  // namespace coda::reports
