// coda serve against the published serving corpus (validation/published/serving/: TensorRT-LLM,
// NIM, MLPerf Inference and SGLang/vLLM measurements, split by source before anything existed to
// fit; SPLIT.md). Every row's scenario simulated as `coda serve` would; prints MAPE, median
// |error|, the worst row and Spearman per split, per source and per metric, and the rows skipped
// with the reason; writes every row to OUT/serving.csv (OUT defaults to results/accuracy).
// Nothing is fitted. Run from the repository top (bench/accuracy.sh runs it).

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/csv.h"
#include "validation/compare.h"
#include "validation/serving_corpus.h"

namespace {

namespace val = coda::validation;

void print_group(const std::string& name, const std::vector<const val::ServingCompared*>& rows) {
  std::vector<double> predicted, measured;
  for (const val::ServingCompared* c : rows) {
    predicted.push_back(*c->predicted);
    measured.push_back(c->row->value);
  }
  const val::ErrorStats e = val::error_stats(predicted, measured);
  const val::ServingCompared& worst = *rows[e.worst];
  std::printf(
      "  %-44s %5zu  MAPE %6.1f%%  median %6.1f%%  Spearman %5.2f  worst %+7.1f%% (%s:%d %s)\n",
      name.c_str(), e.count, 100 * e.mape, 100 * e.median, e.spearman, 100 * e.worst_error,
      worst.row->where.file.c_str(), worst.row->where.line, worst.row->metric.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path manifest =
      argc > 1 ? argv[1] : "validation/published/serving/corpus_serving.yaml";
  const char* out_env = std::getenv("OUT");
  const std::filesystem::path out = out_env != nullptr ? out_env : "results/accuracy";
  coda::Diagnostics diags;
  const auto corpus = val::load_serving_corpus(manifest, diags);
  if (!corpus) {
    std::fputs(diags.format_all().c_str(), stderr);
    return 1;
  }
  const std::vector<val::ServingCompared> rows = val::compare_serving(*corpus, {});
  std::map<std::string, std::vector<const val::ServingCompared*>> by_split, by_source, by_metric;
  std::map<std::string, std::size_t> skipped;
  for (const val::ServingCompared& c : rows) {
    if (!c.predicted) {
      ++skipped[fmt::format("{}: {}", c.row->source, c.skipped)];
      continue;
    }
    const std::string split(val::to_string(c.split));
    // Throughputs and latencies are ranked apart: a Spearman across both means nothing.
    const std::string kind = c.row->metric.starts_with("throughput") ? "throughput" : "latency";
    by_split[fmt::format("{} {}", split, kind)].push_back(&c);
    by_source[fmt::format("{} ({})", c.row->source, split)].push_back(&c);
    by_metric[fmt::format("{} {}", split, c.row->metric)].push_back(&c);
  }
  std::printf(
      "== serving corpus (%s): %zu rows, %zu priced\n", manifest.string().c_str(), rows.size(),
      rows.size() - [&] {
        std::size_t n = 0;
        for (const auto& [why, count] : skipped) n += count;
        return n;
      }());
  std::printf("by split and kind:\n");
  for (const auto& [name, group] : by_split) print_group(name, group);
  std::printf("by source:\n");
  for (const auto& [name, group] : by_source) print_group(name, group);
  std::printf("by metric:\n");
  for (const auto& [name, group] : by_metric) print_group(name, group);
  std::printf("skipped:\n");
  for (const auto& [why, count] : skipped) std::printf("  %4zu  %s\n", count, why.c_str());

  std::filesystem::create_directories(out);
  std::ofstream csv(out / "serving.csv");
  csv << "source,split,line,device,chips,tp,model,dtype,scenario,rate_rps,concurrency,input_len,"
         "output_len,metric,measured,predicted,error,skipped\n";
  for (const val::ServingCompared& c : rows) {
    const val::ServingRow& r = *c.row;
    csv << fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.source,
        val::to_string(c.split), r.where.line, r.device, r.chips, r.tp, r.model, r.dtype,
        r.scenario, r.rate ? fmt::format("{}", *r.rate) : "",
        r.concurrency ? fmt::format("{}", *r.concurrency) : "", r.input_len, r.output_len, r.metric,
        r.value, c.predicted ? fmt::format("{:.6g}", *c.predicted) : "",
        c.predicted ? fmt::format("{:.4f}", c.error()) : "", coda::csv_cell(c.skipped));
  }
  std::printf("wrote %s\n", (out / "serving.csv").string().c_str());
  return 0;
}
