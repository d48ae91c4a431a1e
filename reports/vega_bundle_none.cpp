// The build without the chart libraries (-DCODA_WITH_VEGA=OFF): report.html has static SVGs only.
#include "reports/vega_bundle.h"

namespace coda::reports {

std::vector<std::string_view> vega_scripts() { return {}; }

}  // namespace coda::reports
