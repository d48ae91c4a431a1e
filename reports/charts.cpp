#include "reports/charts.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace coda::reports {
namespace {

constexpr std::string_view kHeader =
    "set terminal svg size 820,460 noenhanced font 'sans,11' background '#ffffff'\n"
    "set encoding utf8\n"
    "set border lw 1\n"
    "set grid lc rgb '#dddddd'\n";

// A gnuplot single-quoted string: ' is written twice.
std::string quoted(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') out += '\'';
    if (c == '\n') {
      out += ' ';
      continue;
    }
    out += c;
  }
  return out + "'";
}

// A cell of a datablock: a category name in double quotes (its own double quotes dropped).
std::string cell(std::string_view text) {
  std::string out = "\"";
  for (const char c : text)
    if (c != '"' && c != '\n') out += c;
  return out + "\"";
}

std::string number(double v) { return std::isfinite(v) ? fmt::format("{:.9g}", v) : "NaN"; }

}  // namespace

bool wants_log(const std::vector<double>& values, double decades) {
  if (values.empty()) return false;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return *lo > 0 && std::log10(*hi / *lo) > decades;
}

SiScale si_scale(double largest) {
  constexpr std::array<std::pair<double, std::string_view>, 4> kPrefixes{
      {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}};
  for (const auto& [scale, prefix] : kPrefixes)
    if (std::abs(largest) >= scale) return {1 / scale, prefix};
  return {};
}

RooflinePlot roofline_plot(const Machine& machine, const std::vector<OpBound>& ops) {
  RooflinePlot plot;
  double top = machine.peak_macs_per_second;
  for (const auto& other : machine.other_peaks) top = std::max(top, other.second);
  for (const OpBound& op : ops)
    if (op.macs > 0 && op.seconds > 0)
      top = std::max(top, static_cast<double>(op.macs) / op.seconds);
  plot.scale = si_scale(top);
  const double f = plot.scale.factor;
  // Ops per level, in the order the ops first name the levels.
  std::vector<std::string> levels;
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = 0;
  double y_lo = std::numeric_limits<double>::infinity(), y_hi = 0;
  for (const OpBound& op : ops)
    for (const LevelLoad& load : op.levels)
      if (std::find(levels.begin(), levels.end(), load.level) == levels.end())
        levels.push_back(load.level);
  for (std::size_t l = 0; l < levels.size(); ++l) {
    RooflineSeries series{l, levels[l], {}};
    for (const OpBound& op : ops) {
      if (op.macs == 0 || op.seconds <= 0) continue;
      for (const LevelLoad& load : op.levels) {
        if (load.level != levels[l] || load.bytes == 0) continue;
        const double y = static_cast<double>(op.macs) / op.seconds * f;
        series.ops.push_back({load.macs_per_byte, y, op.op});
        x_lo = std::min(x_lo, load.macs_per_byte);
        x_hi = std::max(x_hi, load.macs_per_byte);
        y_lo = std::min(y_lo, y);
        y_hi = std::max(y_hi, y);
      }
    }
    if (!series.ops.empty()) plot.series.push_back(std::move(series));
  }
  plot.peak = machine.peak_macs_per_second * f;
  if (plot.peak > 0) {
    y_hi = std::max(y_hi, plot.peak);
    y_lo = std::min(y_lo, plot.peak);
    plot.peak_label = machine.peak_precision.empty()
                          ? std::string("compute peak")
                          : fmt::format("{} peak (the run's)", machine.peak_precision);
    for (const auto& [name, unscaled] : machine.other_peaks) {
      const double other = unscaled * f;
      if (other <= 0) continue;
      y_hi = std::max(y_hi, other);
      y_lo = std::min(y_lo, other);
      plot.other_peaks.emplace_back(fmt::format("{} peak", name), other);
    }
    for (const LevelRoof& level : machine.levels) {
      const double bw = level.bytes_per_second * f;  // in the axis's unit per byte
      if (bw <= 0) continue;
      const double ridge = plot.peak / bw;
      x_lo = std::min(x_lo, ridge);
      x_hi = std::max(x_hi, ridge);
      plot.roofs.push_back({level.name, bw, ridge});
    }
  } else {
    plot.peak = 0;
  }
  if (!std::isfinite(x_lo)) x_lo = x_hi = 1;
  if (!std::isfinite(y_lo)) y_lo = y_hi = 1;
  plot.x_lo = x_lo / 4;
  plot.x_hi = x_hi * 4;
  plot.y_lo = y_lo / 4;
  plot.y_hi = y_hi * 4;
  return plot;
}

std::string roofline_script(const std::string& title, const Machine& machine,
                            const std::vector<OpBound>& ops) {
  std::string script(kHeader);
  script += fmt::format("set title {}\n", quoted(title));
  const RooflinePlot plot = roofline_plot(machine, ops);
  script +=
      "set logscale xy\nset key outside right top\nset samples 400\n"
      "set xlabel 'arithmetic intensity at the level (MACs per byte)'\n";
  script += fmt::format("set ylabel 'achieved {}MAC/s'\n", plot.scale.prefix);
  std::string plots;
  for (const RooflineSeries& series : plot.series) {
    std::string data;
    for (const RooflinePoint& p : series.ops)
      data += fmt::format("{} {} {}\n", number(p.intensity), number(p.rate), cell(p.op));
    const std::size_t l = series.index;
    script += fmt::format("$ops{} << EOD\n{}EOD\n", l, data);
    plots += fmt::format("{}$ops{} using 1:2 with points pt {} ps 1.2 title {}",
                         plots.empty() ? "" : ", ", l, 5 + 2 * static_cast<int>(l % 4),
                         quoted("ops at " + series.level));
  }
  if (plot.peak > 0) {
    script += fmt::format("peak = {}\n", number(plot.peak));
    plots += fmt::format("{}peak with lines lw 2 lc rgb '#000000' title {}",
                         plots.empty() ? "" : ", ", quoted(plot.peak_label));
    for (std::size_t p = 0; p < plot.other_peaks.size(); ++p) {
      script += fmt::format("peak{} = {}\n", p, number(plot.other_peaks[p].second));
      plots += fmt::format(", peak{} with lines lw 1 lc rgb '#999999' dt 3 title {}", p,
                           quoted(plot.other_peaks[p].first));
    }
    for (std::size_t l = 0; l < plot.roofs.size(); ++l) {
      const RooflineRoof& roof = plot.roofs[l];
      script += fmt::format("bw{} = {}\n", l, number(roof.rate_per_intensity));
      plots += fmt::format(
          ", (x * bw{0} < peak ? x * bw{0} : peak) with lines dt {1} lw 1.5 "
          "title {2}",
          l, 2 + static_cast<int>(l % 4),
          quoted(fmt::format("{} roof (ridge {:.3g} MACs/B)", roof.name, roof.ridge)));
    }
  }
  if (plots.empty()) {  // nothing to place: an empty frame with a note
    script += "set label 'no op has MACs to place' at graph 0.5, 0.5 center\n"
              "unset logscale\nplot [0:1][0:1] NaN notitle\n";
    return script;
  }
  script += fmt::format("set xrange [{}:{}]\nset yrange [{}:{}]\n", number(plot.x_lo),
                        number(plot.x_hi), number(plot.y_lo), number(plot.y_hi));
  return script + "plot " + plots + "\n";
}

std::string bar_script(const BarChart& chart) {
  std::string script(kHeader);
  script += fmt::format("set title {}\nset ylabel {}\n", quoted(chart.title),
                        quoted(chart.y_label));
  script += fmt::format("set style data histograms\nset style histogram {}\n",
                        chart.stacked ? "rowstacked" : "clustered gap 1");
  script += "set style fill solid 0.85 border -1\nset boxwidth 0.8\nset key outside right top\n"
            "set xtics rotate by -30 left nomirror\nset yrange [*:*]\n";
  bool negative = false;
  std::string data;
  for (std::size_t c = 0; c < chart.categories.size(); ++c) {
    data += cell(chart.categories[c]);
    for (std::size_t s = 0; s < chart.series.size(); ++s) {
      const double v = c < chart.values[s].size() ? chart.values[s][c] : std::numeric_limits<double>::quiet_NaN();
      negative = negative || v < 0;
      data += " " + number(v);
    }
    data += "\n";
  }
  if (!negative) script += "set yrange [0:*]\n";
  else script += "set xzeroaxis lt -1\n";
  script += fmt::format("$bars << EOD\n{}EOD\n", data);
  std::string plots;
  for (std::size_t s = 0; s < chart.series.size(); ++s)
    plots += fmt::format("{}$bars using {}{} title {}", s == 0 ? "" : ", ", s + 2,
                         s == 0 ? ":xtic(1)" : "", quoted(chart.series[s]));
  if (plots.empty()) plots = "$bars using 0:xtic(1) notitle";
  return script + "plot " + plots + "\n";
}

std::string pareto_script(const ScatterChart& chart) {
  std::string script(kHeader);
  script += fmt::format("set title {}\nset xlabel {}\nset ylabel {}\nset key outside right top\n",
                        quoted(chart.title), quoted(chart.x_label), quoted(chart.y_label));
  std::vector<double> xs, ys;
  for (const auto& [x, y] : chart.points) {
    xs.push_back(x);
    ys.push_back(y);
  }
  if (wants_log(xs, 1.3)) script += "set logscale x\n";
  if (wants_log(ys, 1.3)) script += "set logscale y\n";
  std::string all, front;
  for (const auto& [x, y] : chart.points) all += fmt::format("{} {}\n", number(x), number(y));
  std::vector<std::size_t> order = chart.front;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return chart.points[a] < chart.points[b];
  });
  for (const std::size_t i : order)
    front += fmt::format("{} {}\n", number(chart.points[i].first), number(chart.points[i].second));
  if (all.empty()) all = "NaN NaN\n";
  if (front.empty()) front = "NaN NaN\n";
  script += fmt::format("$all << EOD\n{}EOD\n$front << EOD\n{}EOD\n", all, front);
  for (std::size_t l = 0; l < chart.labelled.size(); ++l) {
    const auto& [index, text] = chart.labelled[l];
    script += fmt::format("set label {} {} at {},{} point pt 6 ps 2 lc rgb '#d62728' offset 1,{}\n",
                          l + 1, quoted(text), number(chart.points[index].first),
                          number(chart.points[index].second), l % 2 == 0 ? "1" : "-1");
  }
  return script +
         "plot $all using 1:2 with points pt 7 ps 0.6 lc rgb '#aaaaaa' title 'designs', "
         "$front using 1:2 with linespoints pt 7 ps 1 lw 2 lc rgb '#1f77b4' title 'Pareto front'\n";
}

std::string pairs_script(const PairChart& chart) {
  const std::size_t k = chart.labels.size();
  const std::size_t panels = k * (k - 1) / 2;
  std::string script(kHeader);
  script +=
      fmt::format("set key off\nset multiplot layout 1,{} title {}\n", panels, quoted(chart.title));
  for (std::size_t a = 0; a < k; ++a)
    for (std::size_t b = a + 1; b < k; ++b) {
      std::string all, front, chosen;
      std::vector<double> xs, ys;
      for (std::size_t d = 0; d < chart.values.size(); ++d) {
        const double x = chart.values[d][a], y = chart.values[d][b];
        const std::string point = fmt::format("{} {}\n", number(x), number(y));
        (d < chart.front.size() && chart.front[d] ? front : all) += point;
        if (d < chart.chosen.size() && !chart.chosen[d].empty()) chosen += point;
        xs.push_back(x);
        ys.push_back(y);
      }
      script += fmt::format("set xlabel {}\nset ylabel {}\n{}logscale x\n{}logscale y\n",
                            quoted(chart.labels[a]), quoted(chart.labels[b]),
                            wants_log(xs, 1.3) ? "set " : "unset ",
                            wants_log(ys, 1.3) ? "set " : "unset ");
      script += fmt::format(
          "$all{0}{1} << EOD\n{2}EOD\n$front{0}{1} << EOD\n{3}EOD\n$chosen{0}{1} << EOD\n{4}EOD\n",
          a, b, all.empty() ? "NaN NaN\n" : all, front.empty() ? "NaN NaN\n" : front,
          chosen.empty() ? "NaN NaN\n" : chosen);
      script += fmt::format(
          "plot $all{0}{1} using 1:2 with points pt 7 ps 0.5 lc rgb '#aaaaaa', "
          "$front{0}{1} using 1:2 with points pt 7 ps 0.8 lc rgb '#1f77b4', "
          "$chosen{0}{1} using 1:2 with points pt 6 ps 1.6 lw 1.5 lc rgb '#d62728'\n",
          a, b);
    }
  return script + "unset multiplot\n";
}

std::string line_script(const LineChart& chart) {
  std::string script(kHeader);
  script += fmt::format("set title {}\nset xlabel {}\nset ylabel {}\nset key outside right top\n",
                        quoted(chart.title), quoted(chart.x_label), quoted(chart.y_label));
  bool positive = true;
  std::string data;
  for (std::size_t i = 0; i < chart.x.size(); ++i) {
    data += number(chart.x[i]);
    for (std::size_t s = 0; s < chart.series.size(); ++s) {
      const double v = i < chart.values[s].size() ? chart.values[s][i]
                                                  : std::numeric_limits<double>::quiet_NaN();
      positive = positive && (!std::isfinite(v) || v > 0);
      data += " " + number(v);
    }
    data += "\n";
  }
  if (data.empty()) data = "NaN\n";
  if (chart.log_y && positive) script += "set logscale y\n";
  script += fmt::format("$lines << EOD\n{}EOD\n", data);
  std::string plots;
  for (std::size_t s = 0; s < chart.series.size(); ++s)
    plots += fmt::format("{}$lines using 1:{} with linespoints pt 7 ps 0.8 lw 2 title {}",
                         s == 0 ? "" : ", ", s + 2, quoted(chart.series[s]));
  if (std::isfinite(chart.limit))
    plots += fmt::format("{}{} with lines dt 2 lw 1.5 lc rgb '#d62728' title {}",
                         plots.empty() ? "" : ", ", number(chart.limit), quoted(chart.limit_label));
  if (plots.empty()) plots = "$lines using 1:1 notitle";
  return script + "plot " + plots + "\n";
}

std::string inline_svg(const std::string& svg, const std::string& prefix) {
  std::string out = svg;
  if (out.rfind("<?xml", 0) == 0)
    if (const auto end = out.find("?>"); end != std::string::npos) out.erase(0, end + 2);
  const auto replace_all = [&](std::string_view from, const std::string& to) {
    for (auto at = out.find(from); at != std::string::npos; at = out.find(from, at + to.size()))
      out.replace(at, from.size(), to);
  };
  for (const char quote : {'\'', '"'}) {
    replace_all(fmt::format("id={}", quote), fmt::format("id={}{}", quote, prefix));
    replace_all(fmt::format("href={}#", quote), fmt::format("href={}#{}", quote, prefix));
  }
  replace_all("url(#", "url(#" + prefix);
  return out;
}

}  // namespace coda::reports
