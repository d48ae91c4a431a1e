#pragma once
// The chart libraries report.html embeds so that its charts are interactive and the page opens
// offline: Vega, Vega-Lite and vega-embed, the minified builds of the npm packages
// web/package.json pins, in the order a page must load them. The build compiles them in
// (reports/CMakeLists.txt); with -DCODA_WITH_VEGA=OFF the list is empty and report.html keeps
// gnuplot's static SVGs only.

#include <string_view>
#include <vector>

namespace coda::reports {

std::vector<std::string_view> vega_scripts();

}  // namespace coda::reports
