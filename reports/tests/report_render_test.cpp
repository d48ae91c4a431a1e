// The report drawn for real: gnuplot makes the charts, headless Chromium opens the page, Vega draws
// them again interactively, and the page counts the charts drawn and their ink. Each test skips
// (with the package to install) when its program is missing.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "reports/co_design_report.h"
#include "reports/gnuplot.h"
#include "reports/tests/report_fixtures.h"
#include "reports/vega_bundle.h"

#ifdef CODA_HAVE_PNG
#include <png.h>
#endif

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

// Headless Chromium with `what` (an action and its page): --no-sandbox as CI runs as root; a
// private profile so no other Chromium is disturbed; virtual time runs the page's timers (the
// count waits 3 s) without waiting for them. Its log goes to dir/chromium.log.
std::string chromium(const fs::path& dir, const std::string& what) {
  return fmt::format(
      "timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
      "--no-first-run --user-data-dir='{}' --virtual-time-budget=30000 {} 2> '{}'",
      (dir / "profile").string(), what, (dir / "chromium.log").string());
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
  const std::string command =
      chromium(dir, fmt::format("--dump-dom 'file://{}' > '{}'",
                                fs::absolute(dir / "report.html").string(), dom.string()));
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

#ifdef CODA_HAVE_PNG
// The share of a PNG's pixels that are ink: opaque and darker than near-white (any channel under
// 230 of 255). nullopt when libpng cannot read it.
std::optional<double> ink_share(const fs::path& png) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (png_image_begin_read_from_file(&image, png.c_str()) == 0) return std::nullopt;
  image.format = PNG_FORMAT_RGBA;
  std::vector<unsigned char> pixels(PNG_IMAGE_SIZE(image));
  if (png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr) == 0) return std::nullopt;
  std::size_t ink = 0;
  for (std::size_t i = 0; i + 3 < pixels.size(); i += 4)
    if (pixels[i + 3] > 0 && std::min({pixels[i], pixels[i + 1], pixels[i + 2]}) < 230) ++ink;
  return static_cast<double>(ink) / (static_cast<double>(pixels.size()) / 4);
}
#endif

// A screenshot of each kind of chart, as a reader sees it: a page holding only that chart, with
// gnuplot's static SVG hidden so that only what Vega draws can paint, taken by Chromium and read
// back with libpng. Each must be more than 1% ink: measured 2026-12-07, the page with the caption
// and no chart drawn is 0.05% ink, the sparsest chart (the Pareto scatter) 2.2%, the others 3.5% to
// 7.6%.
TEST(ReportRender, AScreenshotOfEachChartKindHasInk) {
#ifndef CODA_HAVE_PNG
  GTEST_SKIP() << "built without libpng; install the Debian package libpng-dev "
                  "(scripts/packages.sh lists it) and configure again";
#else
  SKIP_WITHOUT("gnuplot", "gnuplot-nox");
  SKIP_WITHOUT("chromium", "chromium");
  if (vega_scripts().empty()) GTEST_SKIP() << "built with -DCODA_WITH_VEGA=OFF: no Vega charts";
  const ReportOutcome out = build_report(every_chart_kind(), [](std::string_view script) {
    return run_gnuplot(script, milliseconds(20000));
  });
  ASSERT_TRUE(out.report) << out.error;
  const std::string& html = out.report->html;
  const std::string body_start = "</head>\n<body>\n";
  const auto body = html.find(body_start);
  const auto draw = html.rfind("<script>");  // the last script: the one that draws the charts
  ASSERT_NE(body, std::string::npos);
  ASSERT_NE(draw, std::string::npos);
  const std::string hide_static = "<style>div.plot > svg{display:none}</style>\n";
  const fs::path dir = test::scratch_dir("report_render_test", "screenshots");
  // The first chart of each kind, by file name: a Pareto scatter, the pairs, sensitivity bars, a
  // roofline, a serving curve.
  for (const std::string kind :
       {"pareto_0", "pareto_pairs_0", "sensitivity_0", "roofline_1", "serving_ttft_1"}) {
    std::size_t index = out.report->charts.size();
    for (std::size_t c = 0; c < out.report->charts.size(); ++c)
      if (out.report->charts[c].file == kind + ".svg") index = c;
    ASSERT_LT(index, out.report->charts.size()) << kind;
    const std::string open = fmt::format("<figure class=\"chart\" id=\"chart{}\">", index);
    const auto from = html.find(open, body);
    ASSERT_NE(from, std::string::npos) << kind;
    const auto to = html.find("</figure>\n", from) + 10;
    std::ofstream(dir / (kind + ".html"), std::ios::binary)
        << std::string_view(html).substr(0, body) << hide_static << body_start
        << std::string_view(html).substr(from, to - from) << std::string_view(html).substr(draw);
    const fs::path png = dir / (kind + ".png");
    const std::string command = chromium(
        dir, fmt::format("--window-size=1000,800 --screenshot='{}' 'file://{}' > /dev/null",
                         png.string(), fs::absolute(dir / (kind + ".html")).string()));
    ASSERT_EQ(std::system(command.c_str()), 0) << command << "\nsee " << (dir / "chromium.log");
    const std::optional<double> ink = ink_share(png);
    ASSERT_TRUE(ink) << "libpng could not read " << png;
    EXPECT_GT(*ink, 0.01) << kind << ": " << png;
  }
#endif
}

}  // namespace
}  // namespace coda::reports
