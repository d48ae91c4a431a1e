#pragma once
// The result store of a sweep: one SQLite database (DIR/sweep.db) that every finished point is
// written to as it finishes, so a sweep that is killed (kill -9, power loss) loses at most the
// points in flight and `coda sweep --resume` runs only the missing ones.
//
// Tables (docs/sweeps.md):
//   meta(key, value)                   spec_hash, spec_name, schema
//   axes(axis, value, path, text)      the spec's axes: each value's index and text
//   points(idx, arch_hash, finished_at)
//   point_values(point, axis, value)   the value index a point takes on each axis (integers)
//   results(point, workload, workload_name, status, reason, the metrics, the constraint
//           verdicts, feasible, run_summary)
//
// Durability: WAL journal with synchronous=FULL: the WAL is synced at every commit, so a point
// whose transaction committed survives kill -9 and power loss. (NORMAL would survive kill -9 but
// may lose the last commits on power loss.) write_points() writes many points in one
// transaction, one sync: the executor's SweepWriter commits the points that finished while the
// previous commit synced (group commit), which keeps one sync per point from bounding the sweep.
//
// Not thread-safe: the executor serialises writes.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/results.h"
#include "core/sweep_metrics.h"

struct sqlite3;

namespace coda::dse {

// A row's status: core/sweep_metrics.h (the report reads it too).
using results::parse_row_status;
using results::RowStatus;

// A constraint's verdict on a point: unchecked (the spec sets no such constraint), unknown (the
// run cannot say: no area, no time), pass or fail.
enum class Verdict : std::uint8_t { Unchecked, Unknown, Pass, Fail };
std::string_view to_string(Verdict verdict);  // "unchecked", "unknown", "pass", "fail"
std::optional<Verdict> parse_verdict(std::string_view text);

// An axis as the store records it: its path and its values' texts, in the spec's order.
struct StoreAxis {
  std::string path;
  std::vector<std::string> values;
};

// One point x workload.
struct SweepRow {
  std::uint64_t point = 0;
  // The index of the point's value on each axis, in the spec's axis order (the value's text:
  // spec.axes[a].values[values[a]]).
  std::vector<std::uint32_t> values;
  std::string arch_hash;    // 16 hex digits of the point's arch document (0s when unreadable)
  std::uint64_t workload = 0;
  std::string workload_name;
  RowStatus status = RowStatus::Ok;
  std::string reason;  // why a point is infeasible (the diagnostics) or failed, or empty
  double latency_s = 0;
  double throughput_per_s = 0;
  double energy_j = 0;
  double edp_js = 0;
  double perf_per_watt = 0;  // TOPS/W
  double perf_per_mm2 = 0;   // TOPS/mm2; 0 when the area is unknown
  double area_mm2 = 0;
  double power_w = 0;
  std::optional<results::FitStatus> memory_status;  // RunResult.memory.status; none: not run
  Verdict area_verdict = Verdict::Unchecked;
  Verdict power_verdict = Verdict::Unchecked;
  Verdict memory_verdict = Verdict::Unchecked;
  bool feasible = false;  // status ok and no verdict fail or unknown
  // The run in compact form (dse/sweep.h run_summary: totals, memory, per-op costs); empty for
  // an infeasible point.
  std::string run_summary;
  friend bool operator==(const SweepRow&, const SweepRow&) = default;
};

// The fields of a SweepRow that the store's results table and the wire codec (encode_records)
// hold after the point's own (point, values, arch_hash), in their order, each with its
// column name: the one list the SQL schema, the insert, the read and the codec follow, so a new
// field is added here and in SweepRow. `Row` is SweepRow or const SweepRow; `visit` is called
// with (name, field) for fields of type std::uint64_t, std::string, double, bool and the closed
// sets, which the store and the codec hold as their names: RowStatus, Verdict and
// std::optional<results::FitStatus> (empty text: none).
template <class Row, class Visit>
void visit_result_fields(Row& r, Visit&& visit) {
  visit("workload", r.workload);
  visit("workload_name", r.workload_name);
  visit("status", r.status);
  visit("reason", r.reason);
  visit("latency_s", r.latency_s);
  visit("throughput_per_s", r.throughput_per_s);
  visit("energy_j", r.energy_j);
  visit("edp_js", r.edp_js);
  visit("perf_per_watt", r.perf_per_watt);
  visit("perf_per_mm2", r.perf_per_mm2);
  visit("area_mm2", r.area_mm2);
  visit("power_w", r.power_w);
  visit("memory_status", r.memory_status);
  visit("area_verdict", r.area_verdict);
  visit("power_verdict", r.power_verdict);
  visit("memory_verdict", r.memory_verdict);
  visit("feasible", r.feasible);
  visit("run_summary", r.run_summary);
}

// A finished point: its rows, one per workload, written together.
struct SweepPointRecord {
  std::uint64_t index = 0;
  std::vector<std::uint32_t> values;  // as SweepRow::values (each row holds them too)
  std::string arch_hash;
  std::vector<SweepRow> rows;
  friend bool operator==(const SweepPointRecord&, const SweepPointRecord&) = default;
};

class SweepStore {
 public:
  // A new store at `file` for a spec with `spec_hash` and `axes`; nullptr with `why` when the
  // file exists (a previous sweep: resume it or choose another folder) or cannot be created.
  static std::unique_ptr<SweepStore> create(const std::filesystem::path& file,
                                            std::uint64_t spec_hash, const std::string& spec_name,
                                            std::span<const StoreAxis> axes, std::string& why);
  // An existing store; nullptr with `why` when it is missing, unreadable, or was made by a spec
  // with another hash.
  static std::unique_ptr<SweepStore> open(const std::filesystem::path& file,
                                          std::uint64_t spec_hash, std::string& why);
  ~SweepStore();
  SweepStore(const SweepStore&) = delete;
  SweepStore& operator=(const SweepStore&) = delete;

  // The indices of the points already stored.
  std::set<std::uint64_t> done_points() const;
  // The same as one flag per point of a sweep of `points` (an index past the end is not
  // flagged): one bit a point, what plan_sweep takes.
  std::vector<bool> stored_points(std::uint64_t points) const;
  // Writes a point and its rows in one transaction; false with `why` on a database error (the
  // transaction is rolled back).
  bool write_point(const SweepPointRecord& record, std::string& why);
  // Writes several points in one transaction (one sync): all of them, or none and false with
  // `why`.
  bool write_points(std::span<const SweepPointRecord> records, std::string& why);
  // Every row, by point index then workload index.
  std::vector<SweepRow> rows() const;
  // The same, one row at a time to `each` (memory that does not grow with the points); with
  // `summaries` false, run_summary is left empty (the exports do not hold it). Returns the
  // number of rows read.
  std::uint64_t for_each_row(const std::function<void(const SweepRow&)>& each,
                             bool summaries = true) const;
  // SQLite's PRAGMA quick_check of the file: nullopt when it says ok, else what it found (its
  // first messages). open() refuses a damaged store; run it again before trusting an export.
  std::optional<std::string> damage() const;
  // The number of result rows the store holds (SELECT COUNT(*)), to check an export against:
  // rows() stops at the first row it cannot read. nullopt when it cannot be counted.
  std::optional<std::uint64_t> row_count() const;

 private:
  explicit SweepStore(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

// Finished points as bytes (a length-prefixed binary form, sweep_store.cpp), for sending them to
// the rank that writes the store (MPI); the doubles keep every bit, so the decoded records equal
// the encoded ones.
std::vector<std::uint8_t> encode_records(std::span<const SweepPointRecord> records);
// nullopt when `bytes` are not exactly what encode_records writes (any bytes are safe to pass).
std::optional<std::vector<SweepPointRecord>> decode_records(std::span<const std::uint8_t> bytes);

}  // namespace coda::dse
