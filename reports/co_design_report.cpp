#include "reports/co_design_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "core/check.h"
#include "core/units.h"
#include "reports/charts.h"
#include "reports/pareto.h"
#include "reports/sensitivity.h"
#include "reports/vega_bundle.h"
#include "reports/vega_charts.h"

namespace coda::reports {
namespace {

// ---- the document: blocks rendered both as Markdown and as HTML ----

struct Heading {
  int level = 1;
  std::string text;
};
struct Paragraph {
  std::string text;
};
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};
struct ChartRef {
  std::size_t index = 0;  // into the report's charts
};
// A table folded under a one-line summary (HTML's <details>, which GitHub's Markdown renders too).
struct Details {
  std::string summary;
  Table table;
};
using Block = std::variant<Heading, Paragraph, Table, ChartRef, Details>;

std::string html_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string md_cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

constexpr std::string_view kStyle =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;margin:1em 0;font-size:0.9em}"
    "th,td{border:1px solid #ccc;padding:0.25em 0.6em;text-align:right}"
    "th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}"
    "figure{margin:1.5em 0}figure svg{max-width:100%;height:auto}"
    "figcaption{font-size:0.9em;color:#555}code{background:#f5f5f5}";

// Draws each figure's Vega-Lite spec in place of its static SVG; a chart Vega cannot draw keeps
// the SVG and logs why. `figure.drawn` marks those drawn, `figure.vegaView` holds the view.
constexpr std::string_view kDrawCharts = R"js(
document.querySelectorAll('figure.chart').forEach(function (figure) {
  var plot = figure.querySelector('div.plot');
  var spec = figure.querySelector('script.spec');
  if (!plot || !spec || typeof vegaEmbed !== 'function') return;
  var host = document.createElement('div');
  plot.appendChild(host);
  vegaEmbed(host, JSON.parse(spec.textContent),
            {renderer: 'svg', actions: {export: true, source: false, compiled: false, editor: false}})
    .then(function (result) {
      plot.querySelectorAll(':scope > svg').forEach(function (svg) { svg.remove(); });
      figure.classList.add('drawn');
      figure.vegaView = result.view;
    })
    .catch(function (error) {
      host.remove();
      console.error('chart ' + figure.id + ' kept its static SVG: ' + error);
    });
});
)js";

std::string md_table(const Table& t) {
  const auto row = [](const std::vector<std::string>& cells) {
    std::string line = "|";
    for (const std::string& c : cells) line += " " + md_cell(c) + " |";
    return line + "\n";
  };
  std::string out = row(t.header) + "|";
  for (std::size_t i = 0; i < t.header.size(); ++i) out += i == 0 ? "---|" : "---:|";
  out += "\n";
  for (const auto& r : t.rows) out += row(r);
  return out + "\n";
}

std::string html_table(const Table& t) {
  std::string out = "<table>\n<tr>";
  for (const std::string& name : t.header) out += fmt::format("<th>{}</th>", html_escape(name));
  out += "</tr>\n";
  for (const auto& r : t.rows) {
    out += "<tr>";
    for (const std::string& c : r) out += fmt::format("<td>{}</td>", html_escape(c));
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

class Document {
 public:
  explicit Document(const ChartRenderer& render) : render_(render) {}

  void heading(int level, std::string text) { blocks_.emplace_back(Heading{level, std::move(text)}); }
  void paragraph(std::string text) { blocks_.emplace_back(Paragraph{std::move(text)}); }
  void table(Table table) { blocks_.emplace_back(std::move(table)); }
  void details(std::string summary, Table table) {
    blocks_.emplace_back(Details{std::move(summary), std::move(table)});
  }

  // Renders the chart and places it; after the first failure nothing more is rendered.
  // `spec`: the same chart as Vega-Lite (vega_charts.h), drawn over the SVG where the page can.
  void chart(std::string file, std::string title, std::string script, std::string spec) {
    if (!error_.empty()) return;
    GnuplotOutput out = render_(script);
    if (!out.ok) {
      error_ = fmt::format("chart '{}': {}", title, out.error);
      return;
    }
    blocks_.emplace_back(ChartRef{charts_.size()});
    charts_.push_back({std::move(file), std::move(title), std::move(script), std::move(out.svg),
                       std::move(spec)});
  }

  void chart(std::string file, const BarChart& c) {
    chart(std::move(file), c.title, bar_script(c), bar_spec(c));
  }
  void chart(std::string file, const LineChart& c) {
    chart(std::move(file), c.title, line_script(c), line_spec(c));
  }

  const std::string& error() const { return error_; }
  std::vector<ReportChart>& charts() { return charts_; }

  std::string markdown() const {
    std::string out;
    for (const Block& block : blocks_) {
      if (const auto* h = std::get_if<Heading>(&block)) {
        out += fmt::format("{} {}\n\n", std::string(static_cast<std::size_t>(h->level), '#'), h->text);
      } else if (const auto* p = std::get_if<Paragraph>(&block)) {
        out += p->text + "\n\n";
      } else if (const auto* t = std::get_if<Table>(&block)) {
        out += md_table(*t);
      } else if (const auto* d = std::get_if<Details>(&block)) {
        out += fmt::format("<details><summary>{}</summary>\n\n{}</details>\n\n",
                           html_escape(d->summary), md_table(d->table));
      } else if (const auto* c = std::get_if<ChartRef>(&block)) {
        const ReportChart& chart = charts_[c->index];
        out += fmt::format("![{}](charts/{})\n\n", chart.title, chart.file);
      }
    }
    return out;
  }

  std::string html(std::string_view title) const {
    std::string out = fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<title>{}</title>\n<style>{}</style>\n",
        html_escape(title), kStyle);
    const std::vector<std::string_view> scripts = vega_scripts();
    for (const std::string_view script : scripts)
      out += fmt::format("<script>{}</script>\n", script);
    out += "</head>\n<body>\n";
    for (const Block& block : blocks_) {
      if (const auto* h = std::get_if<Heading>(&block)) {
        out += fmt::format("<h{0}>{1}</h{0}>\n", h->level, html_escape(h->text));
      } else if (const auto* p = std::get_if<Paragraph>(&block)) {
        out += fmt::format("<p>{}</p>\n", html_escape(p->text));
      } else if (const auto* t = std::get_if<Table>(&block)) {
        out += html_table(*t);
      } else if (const auto* d = std::get_if<Details>(&block)) {
        out += fmt::format("<details><summary>{}</summary>\n{}</details>\n",
                           html_escape(d->summary), html_table(d->table));
      } else if (const auto* c = std::get_if<ChartRef>(&block)) {
        const ReportChart& chart = charts_[c->index];
        // The static SVG stays inside the chart's div until Vega has drawn the chart.
        out += fmt::format(
            "<figure class=\"chart\" id=\"chart{0}\">\n<div class=\"plot\">{1}\n"
            "</div>\n<script type=\"application/json\" class=\"spec\">{2}</script>"
            "\n<figcaption>{3}</figcaption>\n</figure>\n",
            c->index, inline_svg(chart.svg, fmt::format("c{}_", c->index)), chart.spec,
            html_escape(chart.title));
      }
    }
    if (!scripts.empty()) out += fmt::format("<script>{}</script>\n", kDrawCharts);
    return out + "</body>\n</html>\n";
  }

 private:
  const ChartRenderer& render_;
  std::vector<Block> blocks_;
  std::vector<ReportChart> charts_;
  std::string error_;
};

// ---- numbers ----

std::string num(double v) { return std::isfinite(v) ? fmt::format("{:.4g}", v) : "-"; }
std::string pct(double share) { return fmt::format("{:.1f}%", 100.0 * share); }

double metric(const SweepRow& row, std::string_view name) {
  const auto it = row.metrics.find(name);
  return it == row.metrics.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

// The unit an objective's values are shown in: seconds and joules in the unit core/units.h's
// to_string writes their largest in (ms, us, ns; mJ, uJ, ...), anything else as it is.
using Scale = UnitScale;  // shown = value x factor
Scale scale_of(const SweepObjective& o, const std::vector<double>& values) {
  double largest = 0;
  for (const double v : values)
    if (std::isfinite(v)) largest = std::max(largest, std::abs(v));
  if (o.unit == "s") return coda::scale_of(Seconds{largest});
  if (o.unit == "J") return coda::scale_of(Joules{largest});
  return {1, o.unit};
}
// A table column's header ("latency (ms)") and a chart axis's label ("performance per watt
// (TOPS/W)") in the scale's unit.
std::string scaled_header(const SweepObjective& o, const Scale& scale) {
  return fmt::format("{} ({})", o.name, scale.unit);
}
std::string axis_label(const SweepObjective& o, const Scale& scale) {
  return fmt::format("{} ({})", o.label, scale.unit);
}
// The scale of objective `o` over `rows`.
Scale scale_over(const SweepObjective& o, const std::vector<const SweepRow*>& rows) {
  std::vector<double> values;
  values.reserve(rows.size());
  for (const SweepRow* row : rows) values.push_back(metric(*row, o.metric));
  return scale_of(o, values);
}

// Better first by objective `o`, then by point.
bool better(const SweepRow& a, const SweepRow& b, const SweepObjective& o) {
  const double x = metric(a, o.metric), y = metric(b, o.metric);
  if (x != y) return o.minimise ? x < y : x > y;
  return a.point < b.point;
}

// ---- the sweep ----

std::vector<const SweepObjective*> report_objectives(const SweepResults& s) {
  std::vector<const SweepObjective*> out;
  for (const std::string& name : s.objectives)
    if (const SweepObjective* o = find_sweep_objective(name);
        o != nullptr && std::find(out.begin(), out.end(), o) == out.end())
      out.push_back(o);
  // A front needs two: latency and energy stand in for what the spec did not name.
  for (const char* name : {"latency", "energy"})
    if (out.size() < 2 && std::find(out.begin(), out.end(), find_sweep_objective(name)) == out.end())
      out.push_back(find_sweep_objective(name));
  return out;
}

std::vector<std::string> design_cells(const SweepRow& row) {
  std::vector<std::string> cells{fmt::format("{}", row.point)};
  cells.insert(cells.end(), row.values.begin(), row.values.end());
  return cells;
}

// The rows that ran on `workload`, and those of them that met every constraint.
struct WorkloadRows {
  std::vector<const SweepRow*> ran, feasible;
};

WorkloadRows workload_rows(const SweepResults& s, const std::string& workload) {
  WorkloadRows out;
  for (const SweepRow& row : s.rows) {
    if (row.workload != workload || row.status != results::RowStatus::Ok) continue;
    out.ran.push_back(&row);
    if (row.feasible) out.feasible.push_back(&row);
  }
  return out;
}

std::vector<SensitivityPoint> sensitivity_points(const std::vector<const SweepRow*>& rows,
                                                 const SweepObjective& objective) {
  std::vector<SensitivityPoint> points;
  for (const SweepRow* row : rows) {
    SensitivityPoint p{row->values, {}, metric(*row, objective.metric)};
    for (const std::string& v : row->values)
      p.numbers.push_back(axis_number(v).value_or(std::numeric_limits<double>::quiet_NaN()));
    points.push_back(std::move(p));
  }
  return points;
}

// The workloads' names, in the order their rows first appear.
std::vector<std::string> workload_names(const SweepResults& s) {
  std::vector<std::string> names;
  for (const SweepRow& row : s.rows)
    if (std::find(names.begin(), names.end(), row.workload) == names.end())
      names.push_back(row.workload);
  return names;
}

// The Pareto front of `feasible` over the first two or three objectives, and the designs chosen
// on it (best per objective, knee); `values[i]` are feasible[i]'s objective values.
struct Front {
  std::vector<Sense> senses;
  std::vector<std::string> names;
  std::vector<std::vector<double>> values;
  std::vector<std::size_t> front;
  std::vector<ChosenDesign> chosen;
};

Front front_of(const std::vector<const SweepRow*>& feasible,
               const std::vector<const SweepObjective*>& objectives) {
  Front f;
  const std::size_t k_count = std::min<std::size_t>(3, objectives.size());
  for (std::size_t k = 0; k < k_count; ++k) {
    f.senses.push_back(objectives[k]->minimise ? Sense::Minimise : Sense::Maximise);
    f.names.emplace_back(objectives[k]->name);
  }
  for (const SweepRow* row : feasible) {
    f.values.emplace_back();
    for (std::size_t k = 0; k < k_count; ++k)
      f.values.back().push_back(metric(*row, objectives[k]->metric));
  }
  f.front = pareto_front(f.values, f.senses);
  f.chosen = choose_designs(f.values, f.front, f.senses, f.names);
  return f;
}

// Whether `row` is the base design: on every axis that states the base arch's value, the same
// value (as text, or as the same number: "1024 KiB" is "1 MiB"). False when no axis states one.
bool is_base_design(const SweepResults& s, const SweepRow& row) {
  bool any = false;
  for (std::size_t a = 0; a < s.axes.size() && a < row.values.size(); ++a) {
    if (!s.axes[a].base) continue;
    any = true;
    const std::string& base = *s.axes[a].base;
    if (row.values[a] == base) continue;
    const auto x = axis_number(row.values[a]), y = axis_number(base);
    if (!x || !y || *x != *y) return false;
  }
  return any;
}

// The base design's row among `rows` (the lowest point), or null.
const SweepRow* find_base(const SweepResults& s, const std::vector<const SweepRow*>& rows) {
  for (const SweepRow* row : rows)
    if (is_base_design(s, *row)) return row;
  return nullptr;
}

// A value of an objective in a unit people read: seconds and joules as core/units.h writes them
// (ms, us, mJ, ...); anything else as a number and the objective's unit.
std::string human(double v, const SweepObjective& o) {
  if (!std::isfinite(v)) return "-";
  if (o.unit == "s") return to_string(Seconds{v});
  if (o.unit == "J") return to_string(Joules{v});
  return fmt::format("{:.4g} {}", v, o.unit);
}

bool comparable(double a, double b) {
  return a > 0 && b > 0 && std::isfinite(a) && std::isfinite(b);
}

// Two positive values within 0.05% of each other.
bool equal(double a, double b) { return comparable(a, b) && std::abs(a / b - 1) < 5e-4; }

// `a` against `b`, before the name of `b`: "2.83x lower than" (a ratio from 1.5 up), "3.1%
// higher than", "the same as" (equal); which is better is the objective's business.
std::string versus(double a, double b) {
  if (!comparable(a, b)) return "not comparable with";
  if (equal(a, b)) return "the same as";
  const char* way = a < b ? "lower" : "higher";
  const double ratio = a < b ? b / a : a / b;
  return ratio >= 1.5 ? fmt::format("{:.2f}x {} than", ratio, way)
                      : fmt::format("{:.1f}% {} than", 100 * std::abs(a / b - 1), way);
}

std::string design_text(const SweepResults& s, const SweepRow& row) {
  std::string text;
  for (std::size_t a = 0; a < s.axes.size() && a < row.values.size(); ++a)
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", s.axes[a].path, row.values[a]);
  return fmt::format("point {} ({})", row.point, text);
}

// The report's first section: per workload, the design to pick for each objective and the
// knee, each against the base design and the runner-up, and the axis that moves the objective
// most; then, with several workloads, the design that does best on all of them together.
// Returns the points it names (the best per objective, the knee, the best all-round), each once,
// in the order named: the designs `coda report` writes next to the report.
std::vector<std::uint64_t> recommendation_section(
    Document& doc, const SweepResults& s, const std::vector<const SweepObjective*>& objectives) {
  std::vector<std::uint64_t> named;
  const auto name = [&](std::uint64_t point) {
    if (std::find(named.begin(), named.end(), point) == named.end()) named.push_back(point);
  };
  const std::vector<std::string> workloads = workload_names(s);
  doc.heading(2, "Recommendation");
  std::string base_text;
  for (const SweepAxis& axis : s.axes)
    if (axis.base)
      base_text += fmt::format("{}{} {}", base_text.empty() ? "" : ", ", axis.path, *axis.base);
  doc.paragraph(
      "The designs to pick, per workload: the best for each objective and the knee of the "
      "Pareto front (the balanced choice), each against the base design (the sweep's base arch" +
      (base_text.empty() ? std::string(", which this results.json does not record)")
                         : ": " + base_text + ")") +
      " and the runner-up, with the axis that moves the objective most (its elasticity: -1 "
      "means doubling the axis halves the objective). The sections below give the whole front, "
      "the top designs and every axis's sensitivity. Each design named here is written whole, "
      "loadable by coda run --arch, to designs/point-N.yaml next to this report when coda "
      "report can read the sweep's spec as it was (results.json names it); `coda sweep SPEC "
      "--out DIR --export-design N` writes any point's (DIR/designs/point-N.yaml).");
  const std::size_t k_count = std::min<std::size_t>(3, objectives.size());
  for (const std::string& workload : workloads) {
    const WorkloadRows rows = workload_rows(s, workload);
    if (rows.feasible.empty()) {
      doc.heading(3, "Workload " + workload);
      doc.paragraph(fmt::format("No feasible design: {} points ran, none met every constraint.",
                                rows.ran.size()));
      continue;
    }
    const SweepRow* base = find_base(s, rows.ran);
    std::vector<std::string> lines;
    // Designs on the Pareto front (the Pareto chart's), so that of designs with the same value
    // the one the chart labels is named: one that no other design beats on another objective.
    std::set<const SweepRow*> on_front;
    for (const std::size_t i : front_of(rows.feasible, objectives).front)
      on_front.insert(rows.feasible[i]);
    for (std::size_t k = 0; k < k_count; ++k) {
      const SweepObjective& o = *objectives[k];
      std::vector<const SweepRow*> order = rows.feasible;
      std::sort(order.begin(), order.end(), [&](const SweepRow* a, const SweepRow* b) {
        if (metric(*a, o.metric) == metric(*b, o.metric) && on_front.count(a) != on_front.count(b))
          return on_front.count(a) > on_front.count(b);
        return better(*a, *b, o);
      });
      const SweepRow& best = *order.front();
      name(best.point);
      const double v = metric(best, o.metric);
      std::string line =
          fmt::format("Best {}: {} at {}", o.name, design_text(s, best), human(v, o));
      // Designs as good (within 0.05%) differ from the best only in axes with no effect on this
      // objective: they are named as a group, and the runner-up is the first design after them.
      std::size_t ties = 1;
      while (ties < order.size() && equal(v, metric(*order[ties], o.metric))) ++ties;
      if (ties > 1) {
        std::vector<std::string> free_axes;
        for (std::size_t a = 0; a < s.axes.size(); ++a)
          for (std::size_t t = 1; t < ties; ++t)
            if (order[t]->values.at(a) != best.values.at(a)) {
              free_axes.push_back(s.axes[a].path);
              break;
            }
        line += fmt::format(", as {} {} other design{} that differ{} from it only in {}",
                            ties == 2 ? "is" : "are", ties - 1, ties == 2 ? "" : "s",
                            ties == 2 ? "s" : "", fmt::join(free_axes, ", "));
      }
      std::vector<std::string> against;
      if (base == &best)
        line += " (the base design itself)";
      else if (base != nullptr)
        against.push_back(fmt::format("{} the base design (point {}: {}{})",
                                      versus(v, metric(*base, o.metric)), base->point,
                                      human(metric(*base, o.metric), o),
                                      base->feasible ? "" : ", which breaks a constraint"));
      if (ties < order.size())
        against.push_back(fmt::format("{} the runner-up (point {}: {})",
                                      versus(v, metric(*order[ties], o.metric)), order[ties]->point,
                                      human(metric(*order[ties], o.metric), o)));
      if (!against.empty()) line += "; " + fmt::format("{}", fmt::join(against, " and "));
      // The axis that moves this objective most, over every point that ran.
      std::optional<std::pair<std::size_t, double>> driver;
      const std::vector<SensitivityPoint> points = sensitivity_points(rows.ran, o);
      for (std::size_t a = 0; a < s.axes.size(); ++a) {
        const Elasticity e = elasticity(points, a);
        if (e.slope && (!driver || std::abs(*e.slope) > std::abs(driver->second)))
          driver = {{a, *e.slope}};
      }
      if (driver && std::abs(driver->second) >= 0.0005)
        line += fmt::format(". What moves {} most: {} (elasticity {:+.2f})", o.name,
                            s.axes[driver->first].path, driver->second);
      lines.push_back(line + ".");
    }
    // The knee of the front over the first two or three objectives.
    if (k_count >= 2) {
      const auto [senses, names, values, front, chosen] = front_of(rows.feasible, objectives);
      for (const ChosenDesign& c : chosen) {
        if (std::find(c.labels.begin(), c.labels.end(), "knee") == c.labels.end()) continue;
        const SweepRow& knee = *rows.feasible[c.index];
        name(knee.point);
        std::string line = fmt::format("Balanced (the knee of the {}-design front): {}",
                                       front.size(), design_text(s, knee));
        for (std::size_t k = 0; k < k_count; ++k) {
          const SweepObjective& o = *objectives[k];
          double best = values[front.front()][k];
          for (const std::size_t i : front)
            best = o.minimise ? std::min(best, values[i][k]) : std::max(best, values[i][k]);
          line += fmt::format("{} {} {}", k == 0 ? ":" : ",", o.name, human(values[c.index][k], o));
          if (values[c.index][k] != best && best != 0)
            line +=
                fmt::format(" ({:+.1f}% against the best)", 100 * (values[c.index][k] / best - 1));
        }
        lines.push_back(line + ".");
      }
    }
    if (base == nullptr && !base_text.empty())
      lines.emplace_back("The base design is not one of the sweep's points.");
    doc.heading(3, "Workload " + workload);
    for (std::string& line : lines) doc.paragraph(std::move(line));
  }
  if (workloads.size() < 2 || objectives.empty()) return named;
  // Across workloads: the design whose worst ratio to each workload's best (first objective)
  // is smallest, among the points feasible on every workload.
  const SweepObjective& o = *objectives[0];
  std::map<std::string, double> best_of;
  std::map<std::uint64_t, std::map<std::string, double>> by_point;
  for (const SweepRow& row : s.rows) {
    if (row.status != results::RowStatus::Ok || !row.feasible) continue;
    const double v = metric(row, o.metric);
    if (!(v > 0) || !std::isfinite(v)) continue;
    by_point[row.point][row.workload] = v;
    auto [it, fresh] = best_of.emplace(row.workload, v);
    if (!fresh) it->second = o.minimise ? std::min(it->second, v) : std::max(it->second, v);
  }
  std::optional<std::pair<std::uint64_t, double>> pick;
  std::string worst_on;
  for (const auto& [point, per] : by_point) {
    if (per.size() != workloads.size()) continue;
    double worst = 0;
    std::string where;
    for (const auto& [w, v] : per) {
      const double ratio = o.minimise ? v / best_of[w] : best_of[w] / v;
      if (ratio > worst) {
        worst = ratio;
        where = w;
      }
    }
    if (!pick || worst < pick->second) {
      pick = {{point, worst}};
      worst_on = where;
    }
  }
  if (!pick) {
    doc.paragraph(fmt::format("Across the {} workloads: no design is feasible on all of them.",
                              workloads.size()));
    return named;
  }
  name(pick->first);
  const SweepRow* row = nullptr;
  for (const SweepRow& r : s.rows)
    if (r.point == pick->first) row = &r;
  const std::string how =
      pick->second < 1 + 5e-4
          ? fmt::format("with the best {} on every workload", o.name)
          : fmt::format("within {:.2f}x of the best {} on every workload (its worst is {})",
                        pick->second, o.name, worst_on);
  doc.paragraph(fmt::format(
      "Across the {} workloads ({}): {} is the best all-round design, {}. It is the design whose "
      "worst ratio to each workload's best is smallest, among the designs feasible on all of "
      "them.",
      workloads.size(), fmt::join(workloads, ", "), design_text(s, *row), how));
  return named;
}

// The designs folded into `row` in a top-designs table: "4 (points 307, 311, 315, 319: sram.ifmap
// 1 MiB .. 8 MiB)", naming the axes in which they differ from it; empty when none.
std::string alike_text(const SweepResults& s, const SweepRow& row,
                       const std::vector<const SweepRow*>& alike) {
  if (alike.empty()) return "";
  std::vector<std::string> points, axes;
  for (const SweepRow* a : alike) points.push_back(fmt::format("{}", a->point));
  for (std::size_t x = 0; x < s.axes.size(); ++x) {
    std::vector<std::string> values;
    for (const SweepRow* a : alike)
      if (a->values.at(x) != row.values.at(x) &&
          std::find(values.begin(), values.end(), a->values.at(x)) == values.end())
        values.push_back(a->values.at(x));
    if (values.empty()) continue;
    axes.push_back(values.size() == 1
                       ? fmt::format("{} {}", s.axes[x].path, values.front())
                       : fmt::format("{} {} .. {}", s.axes[x].path, values.front(), values.back()));
  }
  return fmt::format("{} (point{} {}: {})", alike.size(), alike.size() == 1 ? "" : "s",
                     fmt::join(points, ", "), fmt::join(axes, "; "));
}

void sweep_workload(Document& doc, const SweepResults& s, const std::string& workload,
                    std::size_t w, const std::vector<const SweepObjective*>& objectives,
                    std::size_t top) {
  const WorkloadRows rows = workload_rows(s, workload);
  const std::vector<const SweepRow*>& ran = rows.ran;
  const std::vector<const SweepRow*>& feasible = rows.feasible;
  doc.heading(3, "Workload " + workload);
  std::vector<std::string> design_header{"point"};
  for (const SweepAxis& axis : s.axes) design_header.push_back(axis.path);
  if (feasible.empty()) {
    doc.paragraph(fmt::format("No feasible design: {} of the points ran, none met every "
                              "constraint.",
                              ran.size()));
  } else {
    const std::size_t k_count = std::min<std::size_t>(3, objectives.size());
    const auto [senses, names, values, front, chosen] = front_of(feasible, objectives);
    std::map<std::size_t, std::string> why;
    for (const ChosenDesign& c : chosen) {
      std::string text;
      for (const std::string& l : c.labels) text += (text.empty() ? "" : ", ") + l;
      why[c.index] = text;
    }
    std::string over;
    for (std::size_t k = 0; k < k_count; ++k)
      over += fmt::format("{}{} ({})", k == 0 ? "" : k + 1 == k_count ? " and " : ", ", names[k],
                          objectives[k]->minimise ? "lower is better" : "higher is better");
    doc.paragraph(fmt::format(
        "Pareto front over {}: {} of {} feasible designs are not dominated. Chosen: the best "
        "design per objective and the knee (the front design nearest the ideal point once each "
        "objective is scaled to [0, 1] over the front).",
        over, front.size(), feasible.size()));
    std::vector<Scale> scales;
    for (std::size_t k = 0; k < k_count; ++k)
      scales.push_back(scale_over(*objectives[k], feasible));
    Table table{design_header, {}};
    for (std::size_t k = 0; k < k_count; ++k)
      table.header.push_back(scaled_header(*objectives[k], scales[k]));
    table.header.emplace_back("chosen as");
    std::vector<std::size_t> order = front;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return better(*feasible[a], *feasible[b], *objectives[0]);
    });
    for (const std::size_t i : order) {
      std::vector<std::string> cells = design_cells(*feasible[i]);
      for (std::size_t k = 0; k < k_count; ++k)
        cells.push_back(num(values[i][k] * scales[k].factor));
      cells.push_back(why.count(i) > 0 ? why[i] : "");
      table.rows.push_back(std::move(cells));
    }
    doc.table(std::move(table));
    ScatterChart scatter{fmt::format("Pareto front, {}", workload),
                         axis_label(*objectives[0], scales[0]),
                         axis_label(*objectives[1], scales[1]),
                         {},
                         front,
                         {}};
    // Every objective in its unit, for this chart and the pairs chart.
    std::vector<std::vector<double>> scaled;
    for (const auto& v : values) {
      scaled.emplace_back();
      for (std::size_t k = 0; k < k_count; ++k) scaled.back().push_back(v[k] * scales[k].factor);
      scatter.points.emplace_back(scaled.back()[0], scaled.back()[1]);
    }
    // The base design is marked too (with its labels when it was chosen).
    for (std::size_t i = 0; i < feasible.size(); ++i)
      if (is_base_design(s, *feasible[i]))
        why[i] = why.count(i) > 0 ? why[i] + ", base design" : "base design";
    for (const auto& [index, text] : why)
      scatter.labelled.emplace_back(index,
                                    fmt::format("point {}: {}", feasible[index]->point, text));
    // Hover names each design by its point and axis values.
    std::vector<std::string> hover;
    hover.reserve(feasible.size());
    for (const SweepRow* row : feasible) hover.push_back(design_text(s, *row));
    doc.chart(fmt::format("pareto_{}.svg", w), scatter.title, pareto_script(scatter),
              pareto_spec(scatter, hover));
    // Three or more objectives: the front is over all of them, which one pair's projection hides
    // (a front design can look dominated there); every pair shows where each front design wins.
    if (k_count >= 3) {
      PairChart pairs{
          fmt::format("Pareto front over {} objectives, every pair, {}", k_count, workload),
          {},
          std::move(scaled),
          std::vector<bool>(feasible.size(), false),
          hover,
          std::vector<std::string>(feasible.size())};
      for (const auto& [index, text] : why) pairs.chosen[index] = text;
      for (std::size_t k = 0; k < k_count; ++k)
        pairs.labels.push_back(axis_label(*objectives[k], scales[k]));
      for (const std::size_t i : front) pairs.front[i] = true;
      doc.chart(fmt::format("pareto_pairs_{}.svg", w), pairs.title, pairs_script(pairs),
                pairs_spec(pairs));
    }

    // The top designs by the first objective, with every objective, power and area.
    std::vector<const SweepRow*> ranked = feasible;
    std::sort(ranked.begin(), ranked.end(), [&](const SweepRow* a, const SweepRow* b) {
      return better(*a, *b, *objectives[0]);
    });
    // A design as good on the first objective (within 0.05%) as one already listed, and no better
    // on any objective, is not another choice: it is folded into that row (the designs that
    // differ only in an axis with no effect on the ranking, and cost more elsewhere), so the
    // table lists `top` distinct choices.
    const auto no_worse = [&](const SweepRow& a, const SweepRow& b) {
      for (const SweepObjective* o : objectives) {
        const double x = metric(a, o->metric), y = metric(b, o->metric);
        if (!equal(x, y) && (o->minimise ? x > y : x < y)) return false;
      }
      return true;
    };
    std::vector<std::vector<const SweepRow*>> folded;  // per listed row, the designs folded in
    std::vector<const SweepRow*> listed;
    for (const SweepRow* row : ranked) {
      std::size_t into = listed.size();
      for (std::size_t l = 0; l < listed.size() && into == listed.size(); ++l)
        if (equal(metric(*listed[l], objectives[0]->metric), metric(*row, objectives[0]->metric)) &&
            no_worse(*listed[l], *row))
          into = l;
      if (into < listed.size()) {
        folded[into].push_back(row);
      } else if (listed.size() < top) {
        listed.push_back(row);
        folded.emplace_back();
      }
    }
    ranked = listed;
    std::size_t folded_count = 0;
    for (const auto& f : folded) folded_count += f.size();
    doc.paragraph(fmt::format(
        "Top {} feasible designs by {}{}:", ranked.size(), objectives[0]->name,
        folded_count == 0
            ? std::string()
            : fmt::format(" ({} more designs as good on {} but no better on any objective are "
                          "folded into the row they match, under 'alike')",
                          folded_count, objectives[0]->name)));
    Table best{{"rank"}, {}};
    best.header.insert(best.header.end(), design_header.begin(), design_header.end());
    std::vector<Scale> ranked_scales;
    for (const SweepObjective* o : objectives) {
      ranked_scales.push_back(scale_over(*o, ranked));
      best.header.push_back(scaled_header(*o, ranked_scales.back()));
    }
    best.header.emplace_back("power (W)");
    best.header.emplace_back("area (mm2)");
    if (folded_count > 0) best.header.emplace_back("alike");
    for (std::size_t r = 0; r < ranked.size(); ++r) {
      std::vector<std::string> cells{fmt::format("{}", r + 1)};
      for (std::string& c : design_cells(*ranked[r])) cells.push_back(std::move(c));
      for (std::size_t k = 0; k < objectives.size(); ++k)
        cells.push_back(num(metric(*ranked[r], objectives[k]->metric) * ranked_scales[k].factor));
      cells.push_back(num(metric(*ranked[r], "power_w")));
      cells.push_back(num(metric(*ranked[r], "area_mm2")));
      if (folded_count > 0) cells.push_back(alike_text(s, *ranked[r], folded[r]));
      best.rows.push_back(std::move(cells));
    }
    doc.table(std::move(best));
  }

  // Sensitivity over every point that ran (feasible or not: the constraints do not change how an
  // objective responds to an axis).
  if (ran.size() < 2) return;
  doc.paragraph(fmt::format(
      "Sensitivity: the elasticity d ln(objective) / d ln(axis value), a least-squares slope over "
      "the groups of points that differ only in that axis ({} points ran); +1 means the objective "
      "doubles when the axis value doubles. In brackets: groups / points used.",
      ran.size()));
  Table table{{"axis"}, {}};
  BarChart bars{fmt::format("Sensitivity, {}", workload), "elasticity (d ln objective / d ln axis)",
                {}, {}, {}, false};
  for (const SweepObjective* o : objectives) {
    table.header.emplace_back(o->name);
    bars.series.emplace_back(o->name);
    bars.values.emplace_back();
  }
  for (std::size_t a = 0; a < s.axes.size(); ++a) {
    std::vector<std::string> cells{s.axes[a].path};
    bars.categories.push_back(s.axes[a].path);
    for (std::size_t k = 0; k < objectives.size(); ++k) {
      const Elasticity e = elasticity(sensitivity_points(ran, *objectives[k]), a);
      // A slope that rounds to zero is printed as +0.000, never -0.000.
      const double shown = e.slope && std::abs(*e.slope) >= 0.0005 ? *e.slope : 0.0;
      cells.push_back(e.slope ? fmt::format("{:+.3f} ({}/{})", shown, e.groups, e.points)
                              : std::string("n/a"));
      bars.values[k].push_back(e.slope.value_or(std::numeric_limits<double>::quiet_NaN()));
    }
    table.rows.push_back(std::move(cells));
  }
  doc.table(std::move(table));
  doc.chart(fmt::format("sensitivity_{}.svg", w), bars);
}

void sweep_section(Document& doc, const SweepInput& in, std::size_t top) {
  const SweepResults& s = in.results;
  std::size_t ran = 0, feasible = 0;
  for (const SweepRow& row : s.rows) {
    ran += row.status == results::RowStatus::Ok ? 1U : 0U;
    feasible += row.feasible ? 1U : 0U;
  }
  const std::vector<std::string> workloads = workload_names(s);
  doc.heading(2, "Sweep " + s.name);
  doc.paragraph(fmt::format(
      "From {} (spec hash {}, {} sampling): {} rows (point x workload), {} ran, {} infeasible, "
      "{} feasible (ran and met every constraint). A design is named by its point number, the "
      "'point' of results.json and results.csv; values are as the sweep stored them.",
      in.source, s.spec_hash, s.sampling, s.rows.size(), ran, s.rows.size() - ran, feasible));
  const auto objectives = report_objectives(s);
  for (std::size_t w = 0; w < workloads.size(); ++w)
    sweep_workload(doc, s, workloads[w], w, objectives, top);
}

// ---- runs ----

std::vector<std::string> kinds_in_order(const std::vector<OpBound>& ops) {
  std::vector<std::string> kinds;
  for (const OpBound& op : ops)
    if (std::find(kinds.begin(), kinds.end(), op.op_class) == kinds.end())
      kinds.push_back(op.op_class);
  return kinds;
}

// A rate with the SI prefix that makes it read 1 to 999 ("494.7 TMAC/s", "3.35 TB/s").
std::string si_rate(double v, std::string_view unit) {
  const auto [factor, prefix] = si_scale(v);
  return fmt::format("{:.4g} {}{}", v * factor, prefix, unit);
}

std::string machine_note(const RunInput& in) {
  const Machine& m = in.machine;
  std::string roofs;
  for (const LevelRoof& l : m.levels)
    roofs += fmt::format("{}{} {}", roofs.empty() ? "" : ", ", l.name,
                         to_string(Bandwidth{BytesPerSecond{l.bytes_per_second}}));
  return fmt::format(
      "Roofline: peak {} (from {}); {}. An op is memory-bound at the level where its "
      "intensity (MACs per byte moved there) is furthest below the balance (peak / bandwidth), "
      "compute-bound when it is at or above every balance, latency-bound when the engine recorded "
      "a fixed latency (launch, per-hop) as its bound; basis 'engine' marks ops classified by the "
      "engine's recorded bound (no MACs, or no known bandwidth at their levels).",
      si_rate(m.peak_macs_per_second, "MAC/s"), m.source,
      roofs.empty() ? "no level bandwidths known" : "level bandwidths: " + roofs);
}

// A run's ops of one kind, added up: the op-kind table and the latency and energy charts read it.
struct KindTotals {
  std::string kind;
  std::vector<std::size_t> ops;  // indices into the run's ops, in run order
  double seconds = 0, energy_j = 0;
  std::uint64_t macs = 0;
  std::vector<ClassShare> classes;  // the kind's time by class
};

// Per kind, in the order the kinds first run.
std::vector<KindTotals> kind_totals(const results::RunResult& r, const std::vector<OpBound>& ops) {
  std::vector<KindTotals> out;
  for (const std::string& kind : kinds_in_order(ops)) {
    KindTotals t{kind, {}, 0, 0, 0, {}};
    std::vector<OpBound> of_kind;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].op_class != kind) continue;
      t.ops.push_back(i);
      t.seconds += ops[i].seconds;
      t.macs += ops[i].macs;
      t.energy_j += i < r.ops.size() ? r.ops[i].cost.energy.value : 0;
      of_kind.push_back(ops[i]);
    }
    t.classes = class_shares(of_kind);
    out.push_back(std::move(t));
  }
  return out;
}

// One row per kind (ops, time, share, MACs, energy, time by class); then each kind's ops, folded.
void op_kind_tables(Document& doc, const std::vector<KindTotals>& kinds,
                    const std::vector<OpBound>& ops) {
  double total = 0;
  for (const OpBound& op : ops) total += op.seconds;
  Table kinds_table{
      {"op kind", "ops", "time (us)", "share of time", "MACs", "energy (uJ)", "time by class"}, {}};
  for (const KindTotals& k : kinds) {
    std::string by_class;
    for (const ClassShare& c : k.classes)
      by_class += fmt::format("{}{} {}", by_class.empty() ? "" : ", ", c.label, pct(c.share));
    kinds_table.rows.push_back({k.kind, fmt::format("{}", k.ops.size()), num(k.seconds * 1e6),
                                total > 0 ? pct(k.seconds / total) : "n/a",
                                fmt::format("{}", k.macs), num(k.energy_j * 1e6), by_class});
  }
  doc.table(std::move(kinds_table));
  doc.paragraph("Each kind's ops (open a kind to see them):");
  for (const KindTotals& k : kinds) {
    Table table{{"op", "time (us)", "MACs", "class", "basis", "intensity MACs/B (balance)",
                 "bottleneck (busy)"},
                {}};
    for (const std::size_t i : k.ops) {
      const OpBound& op = ops[i];
      std::string levels;
      for (const LevelLoad& l : op.levels)
        levels +=
            fmt::format("{}{}: {}{}", levels.empty() ? "" : "; ", l.level, num(l.macs_per_byte),
                        l.balance ? fmt::format(" ({})", num(*l.balance)) : "");
      table.rows.push_back({op.op, num(op.seconds * 1e6), fmt::format("{}", op.macs),
                            class_label(op), op.basis, levels,
                            op.bottleneck == "latency"
                                ? op.bottleneck
                                : fmt::format("{} ({})", op.bottleneck, pct(op.bottleneck_busy))});
    }
    doc.details(fmt::format("{}: {} op{}, {} us ({} of the time)", k.kind, k.ops.size(),
                            k.ops.size() == 1 ? "" : "s", num(k.seconds * 1e6),
                            total > 0 ? pct(k.seconds / total) : "n/a"),
                std::move(table));
  }
}

void run_section(Document& doc, const RunInput& in, std::size_t index) {
  const results::RunResult& r = in.run;
  doc.heading(2, "Run " + in.label);
  std::string inputs;
  for (const results::InputHash& h : r.provenance.inputs)
    inputs += fmt::format("{}{} {} (hash {})", inputs.empty() ? "" : ", ", h.role, h.path, h.hash);
  doc.paragraph(fmt::format(
      "From {}: {} on {}, {} engine, coda {}; inputs: {}; fusion {}, mapper {}.", in.source,
      r.workload, r.arch, r.provenance.engine, r.provenance.coda_version,
      inputs.empty() ? "none recorded" : inputs, r.fusion_mode, r.mapper));
  doc.table({{"metric", "value"},
             {{"time (s)", num(results::run_time(r).value)},
              {"cycles", fmt::format("{}", r.total.cycles.value)},
              {"clock (Hz)", num(r.clock.value)},
              {"energy (J)", num(r.total.energy.value)},
              {"average power (W)", num(results::average_power(r).value)},
              {"MACs", fmt::format("{}", r.total.macs)},
              {"compute utilization", pct(results::compute_utilization(r))},
              {"TOPS/W", num(results::tops_per_watt(r))},
              {"area (mm2)", num(r.area.value)},
              {"ops (skipped)", fmt::format("{} ({})", r.ops.size(), r.skipped.size())}}});
  doc.paragraph(machine_note(in));
  const std::vector<OpBound> ops = classify_ops(r, in.machine);
  Table shares{{"class", "time (s)", "share of time"}, {}};
  for (const ClassShare& s : class_shares(ops))
    shares.rows.push_back({s.label, num(s.seconds), pct(s.share)});
  doc.table(std::move(shares));
  const std::vector<KindTotals> totals = kind_totals(r, ops);
  op_kind_tables(doc, totals, ops);

  const std::string roofline_title =
      fmt::format("Roofline, {} ({} on {})", in.label, r.workload, r.arch);
  doc.chart(fmt::format("roofline_{}.svg", index), fmt::format("Roofline, {}", in.label),
            roofline_script(roofline_title, in.machine, ops),
            roofline_spec(roofline_title, in.machine, ops));
  // Latency by kind of op, stacked by class; energy by kind of op.
  std::vector<std::string> kinds;
  kinds.reserve(totals.size());
  for (const KindTotals& k : totals) kinds.push_back(k.kind);
  BarChart latency{fmt::format("Latency by op kind, {}", in.label), "time (us)", kinds, {}, {},
                   true};
  for (const ClassShare& s : class_shares(ops)) {
    latency.series.push_back(s.label);
    latency.values.emplace_back();
    for (const KindTotals& k : totals) {
      double us = 0;
      for (const ClassShare& c : k.classes)
        if (c.label == s.label) us = c.seconds * 1e6;
      latency.values.back().push_back(us);
    }
  }
  doc.chart(fmt::format("latency_{}.svg", index), latency);
  BarChart energy{fmt::format("Energy by op kind, {}", in.label),
                  "energy (uJ)",
                  kinds,
                  {"energy"},
                  {{}},
                  false};
  for (const KindTotals& k : totals) energy.values[0].push_back(k.energy_j * 1e6);
  doc.chart(fmt::format("energy_{}.svg", index), energy);
}

// A training step (`coda train --json`): its headline, each pipeline stage's time split, and the
// split as stacked bars per stage (docs/report.md, "Training steps").
void training_section(Document& doc, const TrainingInput& in, std::size_t index) {
  const TrainingStepResult& t = in.step;
  doc.heading(2, "Training step " + in.label);
  const std::string memory =
      t.capacity_bytes
          ? fmt::format("{} of {} ({})", to_string(Bytes{t.memory_per_chip_bytes}),
                        to_string(Bytes{*t.capacity_bytes}), t.fits ? "fits" : "does not fit")
          : to_string(Bytes{t.memory_per_chip_bytes});
  doc.paragraph(fmt::format("From {}: {} on {} x {}, {}; sequences of {} tokens.", in.source,
                            t.model, t.chips, t.arch, t.layout, t.seq));
  doc.table({{"metric", "value"},
             {{"step (s)", num(t.step_s)},
              {"tokens per step", fmt::format("{}", t.tokens)},
              {"tokens/s", num(t.tokens_per_s)},
              {"tokens/s per chip", num(t.tokens_per_s / static_cast<double>(std::max<std::uint64_t>(t.chips, 1)))},
              {"MFU", pct(t.mfu)},
              {"HFU", pct(t.hfu)},
              {"memory per chip", memory},
              {"stage that ends the step", fmt::format("{}", t.critical_stage)}}});
  Table stages{{"stage", "layers", "compute (s)", "of which TP comm (s)", "bubble (s)",
                "DP exposed (s)", "optimizer (s)", "end (s)", "memory"},
               {}};
  BarChart split{fmt::format("Time split per pipeline stage (0, 1, ...), {}", in.label), "time (s)", {},
                 {"compute", "TP communication", "pipeline bubble", "exposed DP communication",
                  "optimizer"},
                 std::vector<std::vector<double>>(5), true};
  for (const TrainingStage& s : t.stages) {
    stages.rows.push_back({fmt::format("{}", s.stage), s.layers, num(s.compute_s),
                           num(s.tp_comm_s), num(s.bubble_s), num(s.dp_exposed_s),
                           num(s.optimizer_s), num(s.end_s), to_string(Bytes{s.memory_bytes})});
    split.categories.push_back(fmt::format("{}", s.stage));
    const double values[] = {s.compute_s - s.tp_comm_s, s.tp_comm_s, s.bubble_s, s.dp_exposed_s,
                             s.optimizer_s};
    for (std::size_t k = 0; k < split.values.size(); ++k) split.values[k].push_back(values[k]);
  }
  doc.table(std::move(stages));
  const TrainingStage& c = t.stages.at(t.critical_stage);
  const double step = t.step_s > 0 ? t.step_s : 1.0;
  doc.paragraph(fmt::format(
      "Stage {} ends the step: compute {} of it (TP communication {}), pipeline bubble {}, "
      "exposed data-parallel communication {}, optimizer {}.",
      c.stage, pct((c.compute_s - c.tp_comm_s) / step), pct(c.tp_comm_s / step),
      pct(c.bubble_s / step), pct(c.dp_exposed_s / step), pct(c.optimizer_s / step)));
  doc.chart(fmt::format("training_{}.svg", index), split);
}

// A serving simulation (`coda serve --out`): its headline and, when it has one, its latency
// against the offered rate (docs/report.md, "Serving").
void serving_section(Document& doc, const ServingInput& in, std::size_t index) {
  const ServingResult& r = in.result;
  doc.heading(2, "Serving " + in.label);
  const std::string slo = r.slo_ttft_s > 0 || r.slo_tpot_s > 0
                              ? fmt::format("; SLO: TTFT {} ms, TPOT {} ms at the 99th percentile",
                                            r.slo_ttft_s > 0 ? num(r.slo_ttft_s * 1e3) : "-",
                                            r.slo_tpot_s > 0 ? num(r.slo_tpot_s * 1e3) : "-")
                              : "";
  doc.paragraph(fmt::format(
      "From {}: {} on {} x {} chips (TP {}, {} replicas), {} requests, "
      "{} arrivals{}{}.",
      in.source, r.model, r.tp * r.replicas, r.arch, r.tp, r.replicas, r.requests, r.arrivals,
      r.summary.rate > 0 ? fmt::format(" at {} requests/s", num(r.summary.rate)) : "", slo));
  const ServingPoint& s = r.summary;
  doc.table({{"metric", "value"},
             {{"requests/s served", num(s.requests_per_s)},
              {"output tokens/s", num(s.output_tokens_per_s)},
              {"TTFT p50 / p99 (ms)", num(s.ttft.p50 * 1e3) + " / " + num(s.ttft.p99 * 1e3)},
              {"TPOT p50 / p99 (ms)", num(s.tpot.p50 * 1e3) + " / " + num(s.tpot.p99 * 1e3)},
              {"ITL p50 / p99 (ms)", num(r.itl.p50 * 1e3) + " / " + num(r.itl.p99 * 1e3)},
              {"E2E p50 / p99 (s)", num(r.e2e.p50) + " / " + num(r.e2e.p99)},
              {"SLO met", s.meets_slo ? "yes" : "no"},
              {"requests within the SLO", pct(r.slo_attainment)},
              {"goodput (requests/s)", num(r.goodput_rps)},
              {"mean batch (sequences)", num(r.mean_batch)},
              {"KV cache used, mean / max",
               pct(r.kv_utilisation_mean) + " / " + pct(r.kv_utilisation_max)},
              {"KV-cache blocks", fmt::format("{}", r.kv_blocks)},
              {"preemptions", fmt::format("{}", r.preemptions)}}});
  if (r.curve.empty()) return;
  Table curve{{"rate (req/s)", "served (req/s)", "output tok/s", "TTFT p50 (ms)", "TTFT p99 (ms)",
               "TPOT p50 (ms)", "TPOT p99 (ms)", "SLO"},
              {}};
  LineChart ttft{fmt::format("TTFT against load, {}", in.label),
                 "offered rate (requests/s)",
                 "TTFT (ms)",
                 {},
                 {"p50", "p99"},
                 {{}, {}},
                 true};
  LineChart tpot{fmt::format("TPOT against load, {}", in.label),
                 "offered rate (requests/s)",
                 "TPOT (ms)",
                 {},
                 {"p50", "p99"},
                 {{}, {}},
                 false};
  if (r.slo_ttft_s > 0) {
    ttft.limit = r.slo_ttft_s * 1e3;
    ttft.limit_label = "SLO";
  }
  if (r.slo_tpot_s > 0) {
    tpot.limit = r.slo_tpot_s * 1e3;
    tpot.limit_label = "SLO";
  }
  for (const ServingPoint& p : r.curve) {
    curve.rows.push_back({num(p.rate), num(p.requests_per_s), num(p.output_tokens_per_s),
                          num(p.ttft.p50 * 1e3), num(p.ttft.p99 * 1e3), num(p.tpot.p50 * 1e3),
                          num(p.tpot.p99 * 1e3), p.meets_slo ? "met" : "not met"});
    ttft.x.push_back(p.rate);
    ttft.values[0].push_back(p.ttft.p50 * 1e3);
    ttft.values[1].push_back(p.ttft.p99 * 1e3);
    tpot.x.push_back(p.rate);
    tpot.values[0].push_back(p.tpot.p50 * 1e3);
    tpot.values[1].push_back(p.tpot.p99 * 1e3);
  }
  doc.table(std::move(curve));
  doc.chart(fmt::format("serving_ttft_{}.svg", index), ttft);
  doc.chart(fmt::format("serving_tpot_{}.svg", index), tpot);
}

// What the runs differ in, for the comparison's title.
std::string comparison_title(const std::vector<RunInput>& runs) {
  std::set<std::string> workloads, archs, fusion;
  for (const RunInput& in : runs) {
    workloads.insert(in.run.workload);
    archs.insert(in.run.arch);
    fusion.insert(in.run.fusion_mode);
  }
  if (workloads.size() == 1 && archs.size() == runs.size())
    return "Hardware comparison on " + *workloads.begin();
  if (workloads.size() == 1 && archs.size() == 1 && fusion.size() > 1)
    return "Fused vs unfused on " + *workloads.begin();
  return "Run comparison";
}

void comparison_section(Document& doc, const std::vector<RunInput>& runs) {
  const std::string title = comparison_title(runs);
  const RunInput& base = runs.front();
  const double base_s = results::run_time(base.run).value;
  const double base_j = base.run.total.energy.value;
  doc.heading(2, title);
  doc.paragraph(fmt::format(
      "Baseline: run {} (the first given). Predicted speed-up = baseline time / run time; energy "
      "ratio = run energy / baseline energy. run.json does not record the precision a run used, "
      "so runs that differ only in precision (fp16 vs int8) are told apart by their labels.",
      base.label));
  Table table{{"run", "arch", "workload", "fusion", "time (s)", "energy (J)", "speed-up",
               "energy ratio"},
              {}};
  BarChart speedup{fmt::format("Predicted speed-up vs {}", base.label), "speed-up (x)", {},
                   {"speed-up"}, {{}}, false};
  std::vector<std::vector<OpBound>> classified;
  std::vector<std::string> kinds;
  for (const RunInput& in : runs) {
    const double s = results::run_time(in.run).value;
    const double j = in.run.total.energy.value;
    const double up = s > 0 ? base_s / s : std::numeric_limits<double>::quiet_NaN();
    table.rows.push_back({in.label, in.run.arch, in.run.workload, in.run.fusion_mode, num(s), num(j),
                          num(up), base_j > 0 ? num(j / base_j) : "-"});
    speedup.categories.push_back(in.label);
    speedup.values[0].push_back(up);
    classified.push_back(classify_ops(in.run, in.machine));
    for (const std::string& k : kinds_in_order(classified.back()))
      if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  }
  doc.table(std::move(table));
  BarChart latency{title + ": latency by op kind", "time (us)", kinds, {}, {}, false};
  for (std::size_t r = 0; r < runs.size(); ++r) {
    latency.series.push_back(runs[r].label);
    latency.values.emplace_back(kinds.size(), 0.0);
    for (const OpBound& op : classified[r])
      latency.values.back()[static_cast<std::size_t>(
          std::find(kinds.begin(), kinds.end(), op.op_class) - kinds.begin())] += op.seconds * 1e6;
  }
  doc.chart("comparison_latency.svg", latency);
  doc.chart("comparison_speedup.svg", speedup);
}

}  // namespace

ReportOutcome build_report(const ReportInput& input, const ChartRenderer& render) {
  CODA_CHECK(input.sweep || !input.runs.empty() || !input.trainings.empty() ||
             !input.servings.empty());
  Document doc(render);
  const std::string title = "coda co-design report";
  doc.heading(1, title);
  std::string sources;
  if (input.sweep) sources = "sweep " + input.sweep->source;
  for (const RunInput& in : input.runs)
    sources += fmt::format("{}run {} = {}", sources.empty() ? "" : "; ", in.label, in.source);
  for (const TrainingInput& in : input.trainings)
    sources += fmt::format("{}training step {} = {}", sources.empty() ? "" : "; ", in.label,
                           in.source);
  for (const ServingInput& in : input.servings)
    sources += fmt::format("{}serving {} = {}", sources.empty() ? "" : "; ", in.label, in.source);
  doc.paragraph("Made by coda report from stored results: " + sources +
                ". Formulas and chart definitions: docs/report.md.");
  std::vector<std::uint64_t> designs;
  if (input.sweep)
    designs =
        recommendation_section(doc, input.sweep->results, report_objectives(input.sweep->results));
  if (input.sweep) sweep_section(doc, *input.sweep, input.top);
  for (std::size_t i = 0; i < input.runs.size(); ++i) run_section(doc, input.runs[i], i + 1);
  if (input.runs.size() >= 2) comparison_section(doc, input.runs);
  for (std::size_t i = 0; i < input.trainings.size(); ++i)
    training_section(doc, input.trainings[i], i + 1);
  for (std::size_t i = 0; i < input.servings.size(); ++i)
    serving_section(doc, input.servings[i], i + 1);
  if (!doc.error().empty()) return {std::nullopt, doc.error()};
  Report report{doc.markdown(), doc.html(title), std::move(doc.charts()), std::move(designs)};
  return {std::move(report), {}};
}

}  // namespace coda::reports
