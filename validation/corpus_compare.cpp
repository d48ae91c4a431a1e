#include "validation/corpus_compare.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/text.h"
#include "core/version.h"

namespace coda::validation {
namespace {

using Json = nlohmann::ordered_json;

constexpr Split kSplits[] = {Split::Validation, Split::Calibration};

// A knob the corpus fit moves must have at least this many calibration rows depending on it:
// fewer would let one row (or a handful of one kind) set a parameter every other kernel uses.
constexpr std::size_t kMinRowsPerKnob = 3;

// Archs of one family share an SM design, so kernels reach the same share of its peak on them.
bool same_design(const arch::ArchSpec& a, const arch::ArchSpec& b) {
  const arch::ComputeUnitSpec* ma = arch::find_unit(a, arch::UnitKind::TensorCore);
  const arch::ComputeUnitSpec* mb = arch::find_unit(b, arch::UnitKind::TensorCore);
  if (ma == nullptr) ma = arch::find_unit(a, arch::UnitKind::Systolic);
  if (mb == nullptr) mb = arch::find_unit(b, arch::UnitKind::Systolic);
  return a.cores == b.cores && a.clock == b.clock && ma != nullptr && mb != nullptr && *ma == *mb;
}

ErrorStats stats_of(const CorpusReport& report, const std::vector<std::size_t>& rows,
                    bool calibrated) {
  std::vector<double> predicted, measured;
  std::vector<std::size_t> index;
  for (const std::size_t i : rows) {
    const ComparedRow& r = report.rows[i].row;
    const auto& p = calibrated ? r.calibrated : r.prediction;
    if (!p) continue;
    predicted.push_back(p->seconds);
    measured.push_back(r.measurement.median_us * 1e-6);
    index.push_back(i);
  }
  ErrorStats s = error_stats(predicted, measured);
  if (s.count > 0) s.worst = index[s.worst];  // as an index into the report's rows
  return s;
}

void add_group(std::vector<CorpusGroup>& groups, std::string name, Split split,
               std::vector<std::size_t> rows, const CorpusReport& report, bool fitted) {
  if (rows.empty()) return;
  CorpusGroup g{std::move(name), split, std::move(rows), {}, {}};
  g.stats = stats_of(report, g.rows, false);
  if (fitted) g.calibrated = stats_of(report, g.rows, true);
  groups.push_back(std::move(g));
}

void make_groups(CorpusReport& report, const Corpus& corpus, bool fitted) {
  for (const Split split : kSplits) {
    const std::string side(to_string(split));
    const auto rows_where = [&](auto keep) {
      std::vector<std::size_t> out;
      for (std::size_t i = 0; i < report.rows.size(); ++i) {
        const CorpusRow& r = report.rows[i];
        if (corpus.entries[r.entry].split == split && keep(r)) out.push_back(i);
      }
      return out;
    };
    add_group(report.by_split, side, split, rows_where([](const CorpusRow&) { return true; }),
              report, fitted);
    for (const CaseClass c : all_classes())
      add_group(report.by_class, fmt::format("{} / {}", side, to_string(c)), split,
                rows_where([&](const CorpusRow& r) {
                  return std::find(r.row.classes.begin(), r.row.classes.end(), c) !=
                         r.row.classes.end();
                }),
                report, fitted);
    std::vector<std::string> ids;
    for (const CorpusEntry& e : corpus.entries)
      if (e.split == split && std::find(ids.begin(), ids.end(), e.id) == ids.end())
        ids.push_back(e.id);
    for (const std::string& id : ids)
      add_group(report.by_source, fmt::format("{} / {}", side, id), split,
                rows_where([&](const CorpusRow& r) { return corpus.entries[r.entry].id == id; }),
                report, fitted);
    for (std::size_t a = 0; a < report.archs.size(); ++a)
      add_group(report.by_arch, fmt::format("{} / {}", side, report.archs[a].spec.name), split,
                rows_where([&](const CorpusRow& r) { return r.arch == a; }), report, fitted);
    for (const KernelInfo& k : kernel_catalog())
      add_group(report.by_kernel, fmt::format("{} / {}", side, k.name), split,
                rows_where([&](const CorpusRow& r) { return r.row.measurement.kernel == k.kernel; }),
                report, fitted);
  }
}

std::string pct(double fraction) {
  return std::isnan(fraction) ? std::string("-") : fmt::format("{:.1f}%", fraction * 100);
}
std::string signed_pct(double fraction) {
  return std::isnan(fraction) ? std::string("-") : fmt::format("{:+.1f}%", fraction * 100);
}
std::string rho(double v) { return std::isnan(v) ? std::string("-") : fmt::format("{:.3f}", v); }

std::string worst_text(const ErrorStats& s, const CorpusReport& report, const Corpus& corpus) {
  if (s.count == 0) return "-";
  const CorpusRow& r = report.rows[s.worst];
  const Measurement& m = r.row.measurement;
  return fmt::format("{} {} {} ({})", corpus.entries[r.entry].id, info(m.kernel).name,
                     shape_text(info(m.kernel).shape, m.shape), signed_pct(s.worst_error));
}

std::string group_table(const std::vector<CorpusGroup>& groups, Split split, bool fitted,
                        const CorpusReport& report, const Corpus& corpus) {
  // A group's name without its split: "validation / gemm" -> "gemm"; the split alone -> "all".
  const auto short_name = [](const std::string& name) {
    const auto at = name.find(" / ");
    return at == std::string::npos ? std::string("all") : name.substr(at + 3);
  };
  std::size_t width = 10;
  for (const CorpusGroup& g : groups)
    if (g.split == split) width = std::max(width, short_name(g.name).size());
  std::string out;
  for (const CorpusGroup& g : groups) {
    if (g.split != split) continue;
    const std::string name = short_name(g.name);
    const auto line = [&](std::string_view label, const ErrorStats& s) {
      return fmt::format("  {:<{}} {:>4} {:>8} {:>8} {:>8}  {}\n", label, width, s.count,
                         pct(s.mape), pct(s.median), rho(s.spearman),
                         worst_text(s, report, corpus));
    };
    out += line(name, g.stats);
    if (fitted) out += line("  fitted", g.calibrated);
  }
  return out;
}

// Training rows' MFU error by source: MFU is the model's FLOPs over step time x chips x peak, so
// coda's MFU over the measured one is the measured step over coda's: error = t_measured /
// t_coda - 1 (issue 18 states its target in MFU). Empty when the split has no llm_train row.
std::string mfu_table(Split split, const CorpusReport& report, const Corpus& corpus) {
  std::vector<std::string> sources;
  std::map<std::string, std::vector<double>> errors;
  for (const CorpusRow& r : report.rows) {
    const Measurement& m = r.row.measurement;
    if (m.kernel != Kernel::LlmTrain || !r.row.prediction || r.row.prediction->seconds <= 0 ||
        corpus.entries[r.entry].split != split)
      continue;
    const std::string& id = corpus.entries[r.entry].id;
    if (!errors.contains(id)) sources.push_back(id);
    errors[id].push_back(m.median_us * 1e-6 / r.row.prediction->seconds - 1.0);
  }
  if (sources.empty()) return {};
  std::string out =
      " training MFU by source (error = measured step / coda's - 1: coda's MFU over the measured)\n";
  for (const std::string& id : sources) {
    std::vector<double> e = errors[id];
    double sum = 0, worst = 0;
    std::vector<double> magnitude;
    for (const double x : e) {
      sum += std::abs(x);
      magnitude.push_back(std::abs(x));
      if (std::abs(x) > std::abs(worst)) worst = x;
    }
    std::sort(magnitude.begin(), magnitude.end());
    const std::size_t n = magnitude.size();
    const double median =
        n % 2 == 1 ? magnitude[n / 2] : (magnitude[n / 2 - 1] + magnitude[n / 2]) / 2.0;
    std::size_t within = 0;
    for (const double x : magnitude) within += x <= 0.10 ? 1 : 0;
    out += fmt::format("  {:<22} {:>4} {:>8} {:>8}  worst {:+.1f}%, {} of {} within 10%\n", id,
                       n, pct(sum / static_cast<double>(n)), pct(median), 100.0 * worst, within,
                       n);
  }
  return out;
}

Json stats_json(const ErrorStats& s, const CorpusReport& report, const Corpus& corpus) {
  const auto number = [](double v) { return std::isnan(v) ? Json(nullptr) : Json(v); };
  Json j;
  j["count"] = s.count;
  j["mape"] = number(s.mape);
  j["median"] = number(s.median);
  j["spearman"] = number(s.spearman);
  if (s.count > 0) {
    j["worst"] = worst_text(s, report, corpus);
    j["worst_error"] = number(s.worst_error);
  }
  return j;
}

}  // namespace

bool check_cluster_chip(const arch::LoadedCluster& cluster, const CorpusEntry& entry,
                        Diagnostics& diags) {
  std::error_code ec;
  if (std::filesystem::equivalent(cluster.spec.chip, entry.arch, ec)) return true;
  diags.error(entry.cluster_where, entry.cluster_key,
              fmt::format("the cluster '{}' is made of {}, not of this entry's arch {}",
                          cluster.spec.name, cluster.spec.chip.string(), entry.arch.string()),
              "name a cluster whose chip: is the entry's arch");
  return false;
}

std::optional<CorpusReport> compare_corpus(const Corpus& corpus, const CorpusOptions& options,
                                           std::string& why) {
  CorpusReport report;
  // The archs, in the order the manifest names them, and their families.
  std::map<std::string, std::size_t> arch_of_path;
  for (const CorpusEntry& e : corpus.entries) {
    const std::string path = e.arch.string();
    if (arch_of_path.contains(path)) continue;
    Diagnostics diags;
    const auto loaded = arch::load_arch(e.arch, diags);
    if (!loaded) {
      why = diags.format_all();
      return std::nullopt;
    }
    CorpusArch a{path, loaded->spec, 0};
    std::size_t family = report.families.size();
    for (std::size_t f = 0; f < report.families.size(); ++f)
      if (same_design(report.archs[report.families[f].archs.front()].spec, a.spec)) family = f;
    if (family == report.families.size()) report.families.emplace_back();
    a.family = family;
    report.families[family].archs.push_back(report.archs.size());
    arch_of_path[path] = report.archs.size();
    report.archs.push_back(std::move(a));
  }

  // The clusters the entries name, each read once; an entry's cluster must be made of its arch.
  std::map<std::string, arch::LoadedCluster> clusters;
  std::vector<const arch::ClusterSpec*> cluster_of(corpus.entries.size(), nullptr);
  for (std::size_t e = 0; e < corpus.entries.size(); ++e) {
    const CorpusEntry& entry = corpus.entries[e];
    if (entry.cluster.empty()) continue;
    auto it = clusters.find(entry.cluster.string());
    if (it == clusters.end()) {
      Diagnostics diags;
      auto loaded = arch::load_cluster(entry.cluster, diags);
      if (!loaded) {
        why = diags.format_all();
        return std::nullopt;
      }
      it = clusters.emplace(entry.cluster.string(), std::move(*loaded)).first;
    }
    if (Diagnostics diags; !check_cluster_chip(it->second, entry, diags)) {
      why = diags.format_all();
      return std::nullopt;
    }
    cluster_of[e] = &it->second.spec;
  }

  // --fit-knobs names knobs of the corpus's archs: checked before any row is priced.
  if (options.fit) {
    std::vector<std::string> all;  // every family's knob names, once each
    if (!options.fit_knobs.empty())
      for (const CorpusFamily& family : report.families)
        for (const std::string& name : knob_names(report.archs[family.archs.front()].spec))
          if (std::find(all.begin(), all.end(), name) == all.end()) all.push_back(name);
    for (const std::string& pattern : options.fit_knobs) {
      if (std::none_of(all.begin(), all.end(),
                       [&](const std::string& n) { return knob_selected(n, pattern); })) {
        why = fmt::format(
            "error: --fit-knobs: '{}' names no knob of the corpus's archs; the knobs (a name, or "
            "its prefix up to a '.'): {}\n",
            pattern, fmt::join(all, ", "));
        return std::nullopt;
      }
    }
  }

  ScheduleCache own_cache;
  PublishedPricing pricing = options.pricing;
  if (pricing.cache == nullptr) pricing.cache = &own_cache;
  std::vector<Predictor> predictors;
  predictors.reserve(report.archs.size());
  for (const CorpusArch& a : report.archs) predictors.emplace_back(a.spec, pricing);

  for (std::size_t e = 0; e < corpus.entries.size(); ++e) {
    const CorpusEntry& entry = corpus.entries[e];
    const std::size_t a = arch_of_path.at(entry.arch.string());
    for (std::size_t i = 0; i < entry.rows.size(); ++i) {
      CorpusRow r{e, a, {}};
      r.row.row = i + 1;
      r.row.measurement = entry.rows[i];
      r.row.classes = classes_of(r.row.measurement.kernel);
      const Measurement& m = r.row.measurement;
      if (std::isnan(m.median_us) || m.median_us <= 0) {
        r.row.skipped = "not measured";
      } else if (m.checked && !m.passed) {
        r.row.skipped = "did not pass its correctness check";
      } else {
        std::string reason;
        r.row.prediction = predictors[a].predict(m, reason, cluster_of[e]);
        if (r.row.prediction)
          r.row.error = relative_error(r.row.prediction->seconds, m.median_us * 1e-6);
        else
          r.row.skipped = fmt::format("coda cannot price it: {}", reason);
      }
      r.row.in_subset = r.row.prediction && entry.split == Split::Calibration;
      report.rows.push_back(std::move(r));
    }
  }

  if (options.fit) {
    for (CorpusFamily& family : report.families) {
      std::vector<arch::ArchSpec> specs;
      for (const std::size_t a : family.archs) specs.push_back(report.archs[a].spec);
      // Stage 1: the kernels' knobs on the kernel rows timed on their own; stage 2: the in-model
      // fixed cost on the kernels timed back to back from a CUDA graph, which measure it, when
      // there are any; stage 3: the other whole-model knobs (and the in-model fixed cost when no
      // graph row set it) on the whole-model rows, every earlier knob held.
      std::vector<FitRow> kernels, graphs, models;
      for (const CorpusRow& r : report.rows) {
        if (!r.row.in_subset) continue;
        const auto at = std::find(family.archs.begin(), family.archs.end(), r.arch);
        if (at == family.archs.end()) continue;
        const FitRow row{&r.row.measurement, static_cast<std::size_t>(at - family.archs.begin()),
                         cluster_of[r.entry]};
        if (Predictor::whole_model(r.row.measurement.kernel))
          models.push_back(row);
        else
          (Predictor::in_model(r.row.measurement) ? graphs : kernels).push_back(row);
      }
      family.fit_rows = kernels.size() + graphs.size() + models.size();
      if (family.fit_rows == 0) continue;
      FitResult fit;
      for (const arch::ArchSpec& spec : specs) fit.fitted.push_back(spec.calibration);
      const auto stage = [&](const std::vector<FitRow>& rows, const FitOptions& o) {
        if (rows.empty()) return;
        FitResult next = fit_calibration(rows, specs, pricing, o);
        for (std::size_t k = 0; k < specs.size(); ++k) specs[k].calibration = next.fitted[k];
        fit.fitted = std::move(next.fitted);
        fit.iterations += next.iterations;
        for (FittedKnob& k : next.knobs) fit.knobs.push_back(std::move(k));
        for (std::string& note : next.notes) fit.notes.push_back(std::move(note));
      };
      if (!options.fit_whole_models_only)
        stage(kernels, {.scope = FitScope::Kernels,
                        .min_rows_per_knob = kMinRowsPerKnob,
                        .only_knobs = options.fit_knobs});
      stage(graphs, {.scope = FitScope::GraphKernels,
                     .min_rows_per_knob = kMinRowsPerKnob,
                     .only_knobs = options.fit_knobs});
      stage(models, {.scope = FitScope::WholeModels,
                     .hold_in_model_fixed_cost = !graphs.empty(),
                     .min_rows_per_knob = kMinRowsPerKnob,
                     .only_knobs = options.fit_knobs});
      family.fit = std::move(fit);
      for (std::size_t k = 0; k < family.archs.size(); ++k) {
        arch::ArchSpec calibrated = report.archs[family.archs[k]].spec;
        calibrated.calibration = family.fit->fitted[k];
        const Predictor after(calibrated, pricing);
        for (CorpusRow& r : report.rows) {
          if (r.arch != family.archs[k] || !r.row.prediction) continue;
          std::string reason;
          r.row.calibrated = after.predict(r.row.measurement, reason, cluster_of[r.entry]);
          CODA_CHECK(r.row.calibrated.has_value());  // knobs never make a row unpriceable
          r.row.calibrated_error =
              relative_error(r.row.calibrated->seconds, r.row.measurement.median_us * 1e-6);
        }
      }
    }
  }
  make_groups(report, corpus, options.fit);
  return report;
}

std::string corpus_report_text(const CorpusReport& report, const Corpus& corpus) {
  const bool fitted = std::any_of(report.families.begin(), report.families.end(),
                                  [](const CorpusFamily& f) { return f.fit.has_value(); });
  std::string out = fmt::format("coda validate --corpus: {} rows from {} files on {} archs\n",
                                report.rows.size(), corpus.entries.size(), report.archs.size());
  out += "error = (coda - measured) / measured; MAPE and median of |error|";
  out += fitted ? "; \"fitted\": with the knobs fitted on the calibration split\n" : "\n";
  for (const Split split : kSplits) {
    out += fmt::format("\n{} split\n", to_string(split));
    out += fmt::format("  {:<10} {:>4} {:>8} {:>8} {:>8}  {}\n", "group", "n", "MAPE", "median",
                       "Spearman", "worst row");
    out += group_table(report.by_split, split, fitted, report, corpus);
    out += " by class\n" + group_table(report.by_class, split, fitted, report, corpus);
    out += " by source\n" + group_table(report.by_source, split, fitted, report, corpus);
    out += " by arch\n" + group_table(report.by_arch, split, fitted, report, corpus);
    out += " by kernel\n" + group_table(report.by_kernel, split, fitted, report, corpus);
    out += mfu_table(split, report, corpus);
  }
  for (std::size_t f = 0; f < report.families.size(); ++f) {
    const CorpusFamily& family = report.families[f];
    std::string names;
    for (const std::size_t a : family.archs)
      names += (names.empty() ? "" : " + ") + report.archs[a].spec.name;
    if (!family.fit) {
      if (fitted) out += fmt::format("\nfamily {}: no calibration row, nothing fitted\n", names);
      continue;
    }
    out += fmt::format("\nfitted on the calibration split, family {} ({} rows, {} Gauss-Newton "
                       "steps):\n",
                       names, family.fit_rows, family.fit->iterations);
    for (const FittedKnob& k : family.fit->knobs) {
      const auto value = [&](double v) {
        return k.seconds ? fmt::format("{:.4g} us", v * 1e6) : fmt::format("{:.4g}", v);
      };
      out += fmt::format("  {:<32} {:>12} -> {:>12}{}\n", k.name, value(k.before),
                         value(k.fitted), k.at_limit ? "  (held at its limit)" : "");
    }
    for (const std::string& note : family.fit->notes) out += fmt::format("  note: {}\n", note);
  }
  // Eager rows on archs that state no host issue time: priced, but as lower bounds.
  std::map<std::string, std::size_t> unpriced_host;
  for (const CorpusRow& r : report.rows)
    if (r.row.prediction && r.row.prediction->host_unpriced)
      ++unpriced_host[fmt::format("{} on {}", corpus.entries[r.entry].id,
                                  report.archs[r.arch].spec.name)];
  if (!unpriced_host.empty()) {
    out += "\nlaunched eagerly, priced without the host's issue time (their arch states no "
           "calibration.eager_issue_time; each prediction is a lower bound):\n";
    for (const auto& [what, count] : unpriced_host)
      out += fmt::format("  {:>4} x {}\n", count, what);
  }
  // The rows coda could not price, by reason.
  std::map<std::string, std::size_t> reasons;
  for (const CorpusRow& r : report.rows)
    if (!r.row.prediction)
      ++reasons[fmt::format("{} {}: {}", corpus.entries[r.entry].id,
                            info(r.row.measurement.kernel).name, r.row.skipped)];
  if (!reasons.empty()) {
    std::size_t total = 0;
    for (const auto& [reason, count] : reasons) total += count;
    out += fmt::format("\nnot compared ({} rows):\n", total);
    for (const auto& [reason, count] : reasons) out += fmt::format("  {:>4} x {}\n", count, reason);
  }
  return out;
}

std::string corpus_report_json(const CorpusReport& report, const Corpus& corpus) {
  const bool fitted = std::any_of(report.families.begin(), report.families.end(),
                                  [](const CorpusFamily& f) { return f.fit.has_value(); });
  Json j;
  j["coda_version"] = std::string(kVersion);
  j["archs"] = Json::array();
  for (const CorpusArch& a : report.archs)
    j["archs"].push_back({{"path", a.path}, {"name", a.spec.name}, {"family", a.family}});
  j["families"] = Json::array();
  for (const CorpusFamily& f : report.families) {
    Json fj;
    fj["archs"] = f.archs;
    fj["fit_rows"] = f.fit_rows;
    if (f.fit) {
      fj["knobs"] = Json::array();
      for (const FittedKnob& k : f.fit->knobs)
        fj["knobs"].push_back({{"name", k.name}, {"unit", k.seconds ? "s" : "fraction"},
                               {"before", k.before}, {"fitted", k.fitted},
                               {"at_limit", k.at_limit}});
      fj["notes"] = f.fit->notes;
    }
    j["families"].push_back(std::move(fj));
  }
  const auto groups = [&](const std::vector<CorpusGroup>& list) {
    Json out = Json::array();
    for (const CorpusGroup& g : list) {
      Json gj{{"name", g.name}, {"split", std::string(to_string(g.split))},
              {"rows", g.rows.size()}, {"stats", stats_json(g.stats, report, corpus)}};
      if (fitted) gj["fitted"] = stats_json(g.calibrated, report, corpus);
      out.push_back(std::move(gj));
    }
    return out;
  };
  j["by_split"] = groups(report.by_split);
  j["by_class"] = groups(report.by_class);
  j["by_source"] = groups(report.by_source);
  j["by_arch"] = groups(report.by_arch);
  j["by_kernel"] = groups(report.by_kernel);
  j["rows"] = Json::array();
  for (const CorpusRow& r : report.rows) {
    const CorpusEntry& e = corpus.entries[r.entry];
    const Measurement& m = r.row.measurement;
    Json rj{{"source", e.id},
            {"file", e.file.filename().string()},
            {"row", r.row.row},
            {"split", std::string(to_string(e.split))},
            {"arch", report.archs[r.arch].spec.name},
            {"kernel", std::string(info(m.kernel).name)},
            {"dtype", std::string(dtype_name(m.dtype))},
            {"shape", shape_text(info(m.kernel).shape, m.shape)},
            {"model", m.model},
            {"measured_us", m.median_us}};
    if (r.row.prediction) {
      rj["predicted_us"] = r.row.prediction->seconds * 1e6;
      rj["error"] = r.row.error;
      rj["bound"] = std::string(to_string(r.row.prediction->bound));
      rj["model_text"] = r.row.prediction->model;
    } else {
      rj["skipped"] = r.row.skipped;
    }
    if (r.row.calibrated) {
      rj["fitted_us"] = r.row.calibrated->seconds * 1e6;
      rj["fitted_error"] = r.row.calibrated_error;
    }
    j["rows"].push_back(std::move(rj));
  }
  return dump_json(j, 2) + "\n";
}

std::string family_calibration_yaml(const CorpusReport& report, std::size_t family) {
  const CorpusFamily& f = report.families.at(family);
  CODA_CHECK(f.fit.has_value());
  std::string names;
  for (const std::size_t a : f.archs)
    names += (names.empty() ? "" : " + ") + report.archs[a].spec.name;
  std::string out = fmt::format(
      "# Written by coda {}: coda validate --corpus ... --fit\n"
      "# Fitted on the calibration split's {} rows of {} ({} Gauss-Newton steps); the knobs are\n"
      "# shared by these archs. The calibration of {} with the fitted knobs:\n",
      kVersion, f.fit_rows, names, f.fit->iterations, report.archs[f.archs.front()].spec.name);
  arch::CalibrationSpec c = f.fit->fitted.front();
  c.source = fmt::format("fitted by coda validate --corpus --fit on the calibration split ({} rows)",
                         f.fit_rows);
  return out + arch::calibration_yaml(c);
}

}  // namespace coda::validation
