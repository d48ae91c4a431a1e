#include "reports/vega_charts.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace coda::reports {
namespace {

using nlohmann::json;

// A one-element array is always written json::array({x}): `{x}` with x a json is, under C++'s
// rules for braced lists of one element of the same type (CWG 1467, which clang applies), a copy of
// x rather than an array holding it.

constexpr int kWidth = 720;
constexpr int kHeight = 380;
constexpr std::string_view kNumber = ".4~g";  // d3-format: 4 significant digits, no trailing 0s

json frame(const std::string& title) {
  return {{"$schema", kVegaLiteSchema},
          {"title", title},
          {"width", kWidth},
          {"height", kHeight},
          {"config",
           {{"font", "sans-serif"},
            {"legend", {{"orient", "right"}}},
            {"axis", {{"labelOverlap", "greedy"}, {"labelSeparation", 6}}}}}};
}

// Drag pans, the wheel zooms, double-click resets: both scales bound to an interval selection.
json zoom() { return {{"name", "zoom"}, {"select", "interval"}, {"bind", "scales"}}; }

// Clicking a legend entry picks the marks with that value of `field`; shift-click adds one.
json legend_pick(const std::string& field) {
  return {
      {"name", "pick"}, {"select", {{"type", "point"}, {"fields", json::array({field})}}}, {"bind", "legend"}};
}
json faded_unless_picked() {
  return {{"condition", {{"param", "pick"}, {"value", 1}}}, {"value", 0.15}};
}

json quantitative(const std::string& field, const std::string& title, bool log) {
  json axis = {{"field", field}, {"type", "quantitative"}, {"title", title}};
  // Padding (pixels) keeps the marks at the ends of the data, and their labels, off the frame.
  axis["scale"] =
      log ? json{{"type", "log"}, {"padding", 14}} : json{{"zero", false}, {"padding", 14}};
  return axis;
}

json tip(const std::string& field, const std::string& title, bool number) {
  json t = {{"field", field}, {"title", title}};
  if (number) {
    t["type"] = "quantitative";
    t["format"] = kNumber;
  } else {
    t["type"] = "nominal";
  }
  return t;
}

// The page inlines the spec in a <script type="application/json">: "</" would end it early.
std::string dump(const json& spec) {
  std::string text = spec.dump();
  for (auto at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3))
    text.replace(at, 2, "<\\/");
  return text;
}

bool finite(double v) { return std::isfinite(v); }
constexpr double kNaNValue = std::numeric_limits<double>::quiet_NaN();

}  // namespace

std::string pareto_spec(const ScatterChart& chart, const std::vector<std::string>& names) {
  std::vector<double> xs, ys;
  for (const auto& [x, y] : chart.points) {
    xs.push_back(x);
    ys.push_back(y);
  }
  const bool log_x = wants_log(xs, 1.3), log_y = wants_log(ys, 1.3);
  std::vector<bool> on_front(chart.points.size(), false);
  for (const std::size_t i : chart.front)
    if (i < on_front.size()) on_front[i] = true;
  std::vector<std::string> label(chart.points.size());
  std::vector<int> number(chart.points.size(), 0);
  for (std::size_t l = 0; l < chart.labelled.size(); ++l) {
    const auto& [index, text] = chart.labelled[l];
    if (index >= label.size()) continue;
    label[index] = text;
    number[index] = static_cast<int>(l + 1);
  }
  json values = json::array();
  for (std::size_t i = 0; i < chart.points.size(); ++i) {
    const auto& [x, y] = chart.points[i];
    if (!finite(x) || !finite(y) || (log_x && x <= 0) || (log_y && y <= 0)) continue;
    json row = {{"x", x},
                {"y", y},
                {"design", i < names.size() ? names[i] : fmt::format("design {}", i + 1)},
                {"role", on_front[i] ? "Pareto front" : "design"}};
    if (!label[i].empty()) {
      row["chosen"] = label[i];
      row["n"] = number[i];
    }
    values.push_back(std::move(row));
  }
  json spec = frame(chart.title);
  spec["data"] = {{"values", values}};
  spec["encoding"] = {{"x", quantitative("x", chart.x_label, log_x)},
                      {"y", quantitative("y", chart.y_label, log_y)}};
  const json tooltip = {tip("design", "design", false), tip("x", chart.x_label, true),
                        tip("y", chart.y_label, true), tip("chosen", "chosen as", false)};
  const json colour = {{"field", "role"},
                       {"type", "nominal"},
                       {"title", nullptr},
                       {"scale",
                        {{"domain", {"design", "Pareto front", "chosen"}},
                         {"range", {"#aaaaaa", "#1f77b4", "#d62728"}}}}};
  json points = {
      {"params", {zoom(), legend_pick("role")}},
      {"mark", {{"type", "circle"}, {"size", 45}}},
      {"encoding", {{"color", colour}, {"opacity", faded_unless_picked()}, {"tooltip", tooltip}}}};
  json front = {{"transform", {{{"filter", "datum.role === 'Pareto front'"}}}},
                {"mark", {{"type", "line"}, {"color", "#1f77b4"}, {"strokeWidth", 2}}},
                {"encoding",
                 {{"order", {{"field", "x"}, {"type", "quantitative"}}},
                  {"opacity", faded_unless_picked()}}}};
  json rings = {{"transform", {{{"filter", "isValid(datum.chosen)"}}}},
                {"mark", {{"type", "point"}, {"size", 220}, {"strokeWidth", 2}, {"filled", false}}},
                {"encoding", {{"color", {{"datum", "chosen"}}}, {"tooltip", tooltip}}}};
  json numbers = {{"transform", {{{"filter", "isValid(datum.chosen)"}}}},
                  {"mark",
                   {{"type", "text"},
                    {"dx", 10},
                    {"dy", -10},
                    {"align", "left"},
                    {"fontWeight", "bold"},
                    {"color", "#d62728"}}},
                  {"encoding", {{"text", {{"field", "n"}, {"type", "nominal"}}}}}};
  spec["layer"] = {points, front, rings, numbers};
  return dump(spec);
}

std::string pairs_spec(const PairChart& chart) {
  // Field names are the axis titles, with the characters Vega-Lite reads as nested access escaped.
  std::vector<std::string> fields;
  for (const std::string& label : chart.labels) {
    std::string field;
    for (const char c : label) {
      if (c == '.' || c == '[' || c == ']' || c == '\\') field += '\\';
      field += c;
    }
    fields.push_back(std::move(field));
  }
  json rows = json::array();
  for (std::size_t d = 0; d < chart.values.size(); ++d) {
    json row = {
        {"design", d < chart.names.size() ? chart.names[d] : fmt::format("design {}", d + 1)},
        {"role", d < chart.front.size() && chart.front[d] ? "Pareto front" : "design"}};
    if (d < chart.chosen.size() && !chart.chosen[d].empty()) {
      row["role"] = "chosen";
      row["chosen"] = chart.chosen[d];
    }
    bool finite_row = true;
    for (std::size_t k = 0; k < chart.labels.size(); ++k) {
      const double v = k < chart.values[d].size() ? chart.values[d][k] : kNaNValue;
      finite_row = finite_row && finite(v);
      row[chart.labels[k]] = v;
    }
    if (finite_row) rows.push_back(std::move(row));
  }
  json tooltip = json::array({tip("design", "design", false), tip("chosen", "chosen as", false)});
  for (std::size_t k = 0; k < fields.size(); ++k)
    tooltip.push_back(tip(fields[k], chart.labels[k], true));
  const json axis = {{"type", "quantitative"}, {"scale", {{"zero", false}, {"padding", 8}}}};
  json x = axis, y = axis;
  x["field"] = {{"repeat", "column"}};
  y["field"] = {{"repeat", "row"}};
  json spec = frame(chart.title);
  spec.erase("width");
  spec.erase("height");
  spec["data"] = {{"values", rows}};
  spec["repeat"] = {{"row", fields}, {"column", fields}};
  spec["spec"] = {
      {"width", 170},
      {"height", 170},
      {"params", {{{"name", "brush"}, {"select", {{"type", "interval"}, {"resolve", "global"}}}}}},
      {"mark", {{"type", "circle"}, {"size", 35}}},
      {"encoding",
       {{"x", x},
        {"y", y},
        {"color",
         {{"condition",
           {{"param", "brush"},
            {"field", "role"},
            {"type", "nominal"},
            {"title", nullptr},
            {"scale",
             {{"domain", {"design", "Pareto front", "chosen"}},
              {"range", {"#aaaaaa", "#1f77b4", "#d62728"}}}}}},
          {"value", "#eeeeee"}}},
        {"size",
         {{"condition", {{"test", "datum.role === 'chosen'"}, {"value", 110}}}, {"value", 35}}},
        {"tooltip", tooltip}}}};
  return dump(spec);
}

std::string bar_spec(const BarChart& chart) {
  json values = json::array();
  for (std::size_t s = 0; s < chart.series.size(); ++s)
    for (std::size_t c = 0; c < chart.categories.size(); ++c) {
      const double v = c < chart.values[s].size() ? chart.values[s][c]
                                                  : std::numeric_limits<double>::quiet_NaN();
      if (finite(v))
        values.push_back(
            {{"category", chart.categories[c]}, {"series", chart.series[s]}, {"value", v}});
    }
  json spec = frame(chart.title);
  spec["data"] = {{"values", values}};
  spec["params"] = json::array({legend_pick("series")});
  spec["mark"] = {{"type", "bar"}, {"tooltip", true}};
  json y = {{"field", "value"}, {"type", "quantitative"}, {"title", chart.y_label}};
  if (!chart.stacked) y["stack"] = nullptr;
  spec["encoding"] = {
      {"x",
       {{"field", "category"},
        {"type", "nominal"},
        {"title", nullptr},
        {"sort", chart.categories},
        {"axis", {{"labelAngle", -30}, {"labelLimit", 220}}}}},
      {"y", y},
      {"color",
       {{"field", "series"}, {"type", "nominal"}, {"title", nullptr}, {"sort", chart.series}}},
      {"opacity", faded_unless_picked()},
      {"tooltip",
       {tip("category", "category", false), tip("series", "series", false),
        tip("value", chart.y_label, true)}}};
  if (!chart.stacked && chart.series.size() > 1)
    spec["encoding"]["xOffset"] = {{"field", "series"}, {"sort", chart.series}};
  return dump(spec);
}

std::string line_spec(const LineChart& chart) {
  bool positive = true;
  json values = json::array();
  for (std::size_t s = 0; s < chart.series.size(); ++s)
    for (std::size_t i = 0; i < chart.x.size(); ++i) {
      const double v = i < chart.values[s].size() ? chart.values[s][i]
                                                  : std::numeric_limits<double>::quiet_NaN();
      if (!finite(v) || !finite(chart.x[i])) continue;
      positive = positive && v > 0;
      values.push_back({{"x", chart.x[i]}, {"series", chart.series[s]}, {"value", v}});
    }
  const bool log_y = chart.log_y && positive;
  json spec = frame(chart.title);
  json lines = {
      {"data", {{"values", values}}},
      {"params", {zoom(), legend_pick("series")}},
      {"mark", {{"type", "line"}, {"point", true}, {"strokeWidth", 2}}},
      {"encoding",
       {{"x", quantitative("x", chart.x_label, false)},
        {"y", quantitative("value", chart.y_label, log_y)},
        {"color",
         {{"field", "series"}, {"type", "nominal"}, {"title", nullptr}, {"sort", chart.series}}},
        {"opacity", faded_unless_picked()},
        {"tooltip",
         {tip("series", "series", false), tip("x", chart.x_label, true),
          tip("value", chart.y_label, true)}}}}};
  spec["layer"] = json::array({lines});
  if (finite(chart.limit) && (!log_y || chart.limit > 0)) {
    json limit = {
        {"data", {{"values", {{{"limit", chart.limit}, {"name", chart.limit_label}}}}}},
        {"mark",
         {{"type", "rule"}, {"color", "#d62728"}, {"strokeDash", {6, 4}}, {"strokeWidth", 1.5}}},
        {"encoding",
         {{"y", {{"field", "limit"}, {"type", "quantitative"}}},
          {"tooltip", {tip("name", "limit", false), tip("limit", chart.y_label, true)}}}}};
    json name = limit;
    name["mark"] = {
        {"type", "text"}, {"align", "left"}, {"dy", -6}, {"color", "#d62728"}, {"x", 4}};
    name["encoding"] = {{"y", {{"field", "limit"}, {"type", "quantitative"}}},
                        {"text", {{"field", "name"}}}};
    spec["layer"].push_back(limit);
    spec["layer"].push_back(name);
  }
  return dump(spec);
}

std::string roofline_spec(const std::string& title, const Machine& machine,
                          const std::vector<OpBound>& ops) {
  const RooflinePlot plot = roofline_plot(machine, ops);
  const std::string rate = fmt::format("achieved {}MAC/s", plot.scale.prefix);
  const std::string intensity = "arithmetic intensity at the level (MACs per byte)";
  json spec = frame(title);
  if (plot.empty()) {
    spec["data"] = {{"values", {{{"note", "no op has MACs to place"}}}}};
    spec["mark"] = "text";
    spec["encoding"] = {{"text", {{"field", "note"}}}};
    return dump(spec);
  }
  json points = json::array();
  for (const RooflineSeries& series : plot.series)
    for (const RooflinePoint& p : series.ops)
      if (p.intensity > 0 && p.rate > 0)
        points.push_back({{"x", p.intensity},
                          {"y", p.rate},
                          {"op", p.op},
                          {"series", "ops at " + series.level}});
  // Peaks and roofs as polylines (a straight line on log-log axes needs only its ends); a roof is
  // drawn up to its ridge, where it meets the peak: min(peak, bandwidth x intensity).
  json lines = json::array();
  json names = json::array(), colours = json::array();
  const auto line = [&](const std::string& name, const std::string& kind, const char* colour,
                        std::initializer_list<std::pair<double, double>> ends) {
    for (const auto& [x, y] : ends)
      lines.push_back({{"x", x}, {"y", y}, {"line", name}, {"kind", kind}});
    names.push_back(name);
    colours.push_back(colour);
  };
  if (plot.peak > 0) {
    line(plot.peak_label, "peak", "#000000", {{plot.x_lo, plot.peak}, {plot.x_hi, plot.peak}});
    for (const auto& [name, other] : plot.other_peaks)
      line(name, "other peak", "#999999", {{plot.x_lo, other}, {plot.x_hi, other}});
    constexpr std::array<const char*, 6> kRoofColours{"#1f77b4", "#ff7f0e", "#2ca02c",
                                                      "#9467bd", "#8c564b", "#e377c2"};
    for (std::size_t r = 0; r < plot.roofs.size(); ++r) {
      const RooflineRoof& roof = plot.roofs[r];
      const double start = std::max(plot.x_lo, plot.y_lo / roof.rate_per_intensity);
      line(fmt::format("{} roof (ridge {:.3g} MACs/B)", roof.name, roof.ridge), "roof",
           kRoofColours[r % kRoofColours.size()],
           {{start, start * roof.rate_per_intensity}, {roof.ridge, plot.peak}});
    }
  }
  const auto axis = [](const std::string& field, const std::string& name, double lo, double hi) {
    return json{{"field", field},
                {"type", "quantitative"},
                {"title", name},
                {"scale", {{"type", "log"}, {"domain", {lo, hi}}}}};
  };
  spec["encoding"] = {{"x", axis("x", intensity, plot.x_lo, plot.x_hi)},
                      {"y", axis("y", rate, plot.y_lo, plot.y_hi)}};
  const json series = {{"field", "series"}, {"type", "nominal"}, {"title", "ops"}};
  json dots = {{"data", {{"values", points}}},
               {"params", {zoom(), legend_pick("series")}},
               {"mark", {{"type", "point"}, {"filled", true}, {"size", 50}}},
               {"encoding",
                {{"color", series},
                 {"shape", {{"field", "series"}, {"type", "nominal"}, {"legend", nullptr}}},
                 {"opacity", faded_unless_picked()},
                 {"tooltip",
                  {tip("op", "op", false), tip("series", "level", false),
                   tip("x", "MACs per byte", true), tip("y", rate, true)}}}}};
  json roofs = {
      {"data", {{"values", lines}}},
      {"mark", {{"type", "line"}, {"clip", true}, {"strokeWidth", 1.5}}},
      {"encoding",
       {{"color",
         {{"field", "line"},
          {"type", "nominal"},
          {"title", "peaks and roofs"},
          {"sort", nullptr},
          {"scale", {{"domain", names}, {"range", colours}}}}},
        {"strokeDash",
         {{"field", "kind"},
          {"type", "nominal"},
          {"legend", nullptr},
          {"scale",
           {{"domain", {"peak", "other peak", "roof"}}, {"range", {{1, 0}, {2, 3}, {6, 3}}}}}}},
        {"tooltip", {tip("line", "line", false), tip("y", rate, true)}}}}};
  spec["resolve"] = {{"scale", {{"color", "independent"}}}};
  spec["layer"] = {dots, roofs};
  return dump(spec);
}

}  // namespace coda::reports
