#include "core/results.h"

#include <array>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/enum_table.h"

namespace coda::results {

Cost operator+(Cost a, const Cost& b) {
  a.cycles += b.cycles;
  a.compute_cycles += b.compute_cycles;
  a.stall_cycles += b.stall_cycles;
  a.macs += b.macs;
  a.sram_reads += b.sram_reads;
  a.sram_writes += b.sram_writes;
  a.dram_reads += b.dram_reads;
  a.dram_writes += b.dram_writes;
  a.energy.value += b.energy.value;
  return a;
}

namespace {

constexpr std::array<std::pair<std::string_view, Bound>, 3> kBounds{
    {{"compute", Bound::Compute}, {"memory", Bound::Memory}, {"latency", Bound::Latency}}};

constexpr std::array<std::pair<std::string_view, OpUnit>, 6> kOpUnits{
    {{"systolic", OpUnit::Systolic},
     {"tensor_core", OpUnit::TensorCore},
     {"vector", OpUnit::Vector},
     {"transfer", OpUnit::Transfer},
     {"collective", OpUnit::Collective},
     {"attention", OpUnit::Attention}}};

constexpr std::array<std::pair<std::string_view, FitStatus>, 3> kFitStatuses{
    {{"fits", FitStatus::Fits},
     {"does not fit", FitStatus::DoesNotFit},
     {"unknown capacity", FitStatus::UnknownCapacity}}};

}  // namespace

std::string_view to_string(Bound bound) { return enum_name(kBounds, bound); }
std::optional<Bound> parse_bound(std::string_view name) { return enum_value(kBounds, name); }
std::string bound_names() { return enum_names(kBounds); }

std::string_view to_string(FitStatus status) { return enum_name(kFitStatuses, status); }
std::optional<FitStatus> parse_fit_status(std::string_view name) {
  return enum_value(kFitStatuses, name);
}
std::string fit_status_names() { return enum_names(kFitStatuses); }

std::string_view to_string(OpUnit unit) { return enum_name(kOpUnits, unit); }
std::optional<OpUnit> parse_op_unit(std::string_view name) { return enum_value(kOpUnits, name); }
std::string op_unit_names() { return enum_names(kOpUnits); }

std::uint64_t mapping_value(const OpResult& op, std::string_view key) {
  for (const auto& [name, value] : op.mapping)
    if (name == key) return value;
  return 0;
}

double compute_utilization(const RunResult& run) {
  const double capacity = static_cast<double>(run.processing_elements) *
                          static_cast<double>(run.total.compute_cycles.value);
  return capacity > 0 ? static_cast<double>(run.total.macs) / capacity : 0.0;
}

Seconds run_time(const RunResult& run) {
  return Seconds{(run.clock.value > 0
                      ? static_cast<double>(run.total.cycles.value) / run.clock.value
                      : 0.0) +
                 run.host_wait.value};
}

Watts average_power(const RunResult& run) {
  const double seconds = run_time(run).value;
  return Watts{seconds > 0 ? run.total.energy.value / seconds : 0.0};
}

double tops_per_watt(const RunResult& run) {
  const double joules = run.total.energy.value;
  return joules > 0 ? 2.0 * static_cast<double>(run.total.macs) / joules / 1e12 : 0.0;
}

std::string hex_hash(std::uint64_t hash) { return fmt::format("{:016x}", hash); }

void to_json(nlohmann::ordered_json& j, const Cost& c) {
  j = {{"cycles", c.cycles.value},           {"compute_cycles", c.compute_cycles.value},
       {"stall_cycles", c.stall_cycles.value}, {"macs", c.macs},
       {"sram_read_bytes", c.sram_reads.value}, {"sram_write_bytes", c.sram_writes.value},
       {"dram_read_bytes", c.dram_reads.value}, {"dram_write_bytes", c.dram_writes.value},
       {"energy_joules", c.energy.value}};
}

void from_json(const nlohmann::ordered_json& j, Cost& c) {
  c.cycles.value = j.at("cycles").get<std::uint64_t>();
  c.compute_cycles.value = j.at("compute_cycles").get<std::uint64_t>();
  c.stall_cycles.value = j.at("stall_cycles").get<std::uint64_t>();
  c.macs = j.at("macs").get<std::uint64_t>();
  c.sram_reads.value = j.at("sram_read_bytes").get<std::uint64_t>();
  c.sram_writes.value = j.at("sram_write_bytes").get<std::uint64_t>();
  c.dram_reads.value = j.at("dram_read_bytes").get<std::uint64_t>();
  c.dram_writes.value = j.at("dram_write_bytes").get<std::uint64_t>();
  c.energy.value = j.value("energy_joules", 0.0);
}

StallBreakdown& StallBreakdown::operator+=(const StallBreakdown& other) {
  dram_bandwidth = dram_bandwidth + other.dram_bandwidth;
  dram_latency = dram_latency + other.dram_latency;
  bank_conflicts = bank_conflicts + other.bank_conflicts;
  network = network + other.network;
  launch = launch + other.launch;
  return *this;
}

namespace {

nlohmann::ordered_json stalls_json(const StallBreakdown& s) {
  return {{"dram_bandwidth", s.dram_bandwidth.value}, {"dram_latency", s.dram_latency.value},
          {"bank_conflicts", s.bank_conflicts.value}, {"network", s.network.value},
          {"launch", s.launch.value}};
}

StallBreakdown stalls_from(const nlohmann::ordered_json& j) {
  const auto cycles = [&](const char* key) { return Cycles{j.at(key).get<std::uint64_t>()}; };
  return {cycles("dram_bandwidth"), cycles("dram_latency"), cycles("bank_conflicts"),
          cycles("network"), cycles("launch")};
}

}  // namespace

void to_json(nlohmann::ordered_json& j, const OpResult& op) {
  nlohmann::ordered_json mapping = nlohmann::ordered_json::object();
  for (const auto& [name, value] : op.mapping) mapping[name] = value;
  nlohmann::ordered_json traffic = nlohmann::ordered_json::array();
  for (const auto& t : op.traffic)
    traffic.push_back({{"tensor", t.tensor},
                       {"level", t.level},
                       {"read_bytes", t.reads.value},
                       {"write_bytes", t.writes.value}});
  j = {{"name", op.name},
       {"unit", to_string(op.unit)},
       {"mapping", mapping},
       {"cost", op.cost},
       {"mapping_efficiency", op.mapping_efficiency},
       {"compute_utilization", op.compute_utilization},
       {"bound", to_string(op.bound)},
       {"arithmetic_intensity", op.arithmetic_intensity},
       {"traffic", traffic}};
  if (!op.loop_nest.empty()) j["loop_nest"] = op.loop_nest;
  if (op.stalls) j["stalls"] = stalls_json(*op.stalls);
  if (!op.notes.empty()) j["notes"] = op.notes;
  if (!op.precision.empty()) j["precision"] = op.precision;
}

void from_json(const nlohmann::ordered_json& j, OpResult& op) {
  op.name = j.at("name").get<std::string>();
  // Readers check the names first (reports/stored_results.cpp); a bad one here is a caller's
  // unchecked JSON, and an error naming it, never a silent default.
  const std::string unit = j.value("unit", std::string("systolic"));
  const std::optional<OpUnit> parsed_unit = parse_op_unit(unit);
  if (!parsed_unit)
    throw std::runtime_error(fmt::format("op '{}': unit '{}' is not one of {}", op.name, unit,
                                         op_unit_names()));
  op.unit = *parsed_unit;
  op.mapping.clear();
  // ordered_json keeps the written order.
  for (const auto& [name, value] : j.at("mapping").items())
    op.mapping.emplace_back(name, value.get<std::uint64_t>());
  op.cost = j.at("cost").get<Cost>();
  op.mapping_efficiency = j.at("mapping_efficiency").get<double>();
  op.compute_utilization = j.at("compute_utilization").get<double>();
  const std::string bound = j.at("bound").get<std::string>();
  const std::optional<Bound> parsed_bound = parse_bound(bound);
  if (!parsed_bound)
    throw std::runtime_error(
        fmt::format("op '{}': bound '{}' is not one of {}", op.name, bound, bound_names()));
  op.bound = *parsed_bound;
  op.arithmetic_intensity = j.at("arithmetic_intensity").get<double>();
  op.traffic.clear();
  for (const auto& t : j.at("traffic"))
    op.traffic.push_back({t.at("tensor").get<std::string>(), t.at("level").get<std::string>(),
                          Bytes{t.at("read_bytes").get<std::uint64_t>()},
                          Bytes{t.at("write_bytes").get<std::uint64_t>()}});
  op.loop_nest = j.value("loop_nest", std::string());
  op.stalls.reset();
  if (const auto s = j.find("stalls"); s != j.end()) op.stalls = stalls_from(*s);
  op.notes = j.value("notes", std::vector<std::string>());
  op.precision = j.value("precision", std::string());
}

void to_json(nlohmann::ordered_json& j, const RunResult& run) {
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
  for (const auto& in : run.provenance.inputs)
    inputs.push_back({{"role", in.role}, {"path", in.path}, {"hash", in.hash}});
  j = {{"schema_version", 1},
       {"provenance",
        {{"coda_version", run.provenance.coda_version},
         {"engine", run.provenance.engine},
         {"inputs", inputs}}},
       {"arch", run.arch},
       {"workload", run.workload},
       {"clock_hz", run.clock.value},
       {"processing_elements", run.processing_elements},
       {"area_mm2", run.area.value},
       {"total", run.total},
       {"compute_utilization", compute_utilization(run)},
       {"seconds", run_time(run).value},
       {"average_power_watts", average_power(run).value},
       {"tops_per_watt", tops_per_watt(run)},
       {"ops", run.ops}};
  nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
  for (const auto& s : run.skipped) skipped.push_back({{"name", s.name}, {"reason", s.reason}});
  j["skipped"] = skipped;
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const auto& g : run.fusion)
    groups.push_back(
        {{"kind", g.kind}, {"ops", g.ops}, {"dram_bytes_saved", g.dram_bytes_saved.value}});
  nlohmann::ordered_json rejected = nlohmann::ordered_json::array();
  for (const auto& r : run.fusion_rejected)
    rejected.push_back({{"kind", r.kind}, {"ops", r.ops}, {"reason", r.reason}});
  j["fusion"] = {{"mode", run.fusion_mode}, {"groups", groups}, {"rejected", rejected}};
  if (run.residency) {
    const Residency& r = *run.residency;
    nlohmann::ordered_json kept = nlohmann::ordered_json::array();
    for (const ResidentTensor& t : r.kept)
      kept.push_back({{"tensor", t.tensor},
                      {"bytes", t.bytes.value},
                      {"producer", t.producer},
                      {"last_reader", t.last_reader},
                      {"dram_bytes_saved", t.dram_bytes_saved.value}});
    nlohmann::ordered_json not_kept = nlohmann::ordered_json::array();
    for (const NonResidentTensor& t : r.rejected)
      not_kept.push_back({{"tensor", t.tensor}, {"bytes", t.bytes.value}, {"reason", t.reason}});
    nlohmann::ordered_json residency = {{"activations", r.activations},
                                        {"on_chip_bytes", r.on_chip.value},
                                        {"kept", kept},
                                        {"rejected", not_kept}};
    if (r.weights) {
      const CachedWeights& w = *r.weights;
      residency["weight_cache"] = {{"levels", w.levels},
                                   {"capacity_bytes", w.capacity.value},
                                   {"reserve_bytes", w.reserve.value},
                                   {"budget_bytes", w.budget.value},
                                   {"cached_bytes", w.cached.value},
                                   {"streamed_bytes", w.streamed.value},
                                   {"tensors_cached", w.tensors_cached},
                                   {"tensors_streamed", w.tensors_streamed},
                                   {"first_streamed", w.first_streamed},
                                   {"dram_bytes_saved", w.dram_bytes_saved.value}};
    }
    j["residency"] = residency;
  }
  j["mapper"] = run.mapper;
  if (!run.gemm_path.empty())
    j["kernels"] = {{"gemm_path", run.gemm_path},
                    {"attention", run.attention_impl},
                    {"decode_attention", run.decode_attention}};
  if (!run.launch.empty())
    j["launch"] = {{"mode", run.launch},
                   {"issue_time_s", run.host_issue.value},
                   {"host_wait_s", run.host_wait.value}};
  const MemoryFootprint& m = run.memory;
  j["memory"] = {{"status", to_string(m.status)},
                 {"needed_bytes", m.needed.value},
                 {"available_bytes", m.available.value},
                 {"weights_bytes", m.weights.value},
                 {"kv_cache_bytes", m.kv_cache.value},
                 {"optimizer_state_bytes", m.optimizer_state.value},
                 {"activations_bytes", m.activations.value},
                 {"on_chip_bytes", m.on_chip.value},
                 {"ops_over_on_chip", m.ops_over_on_chip},
                 {"reason", m.reason}};
  if (run.stalls) j["stalls"] = stalls_json(*run.stalls);
  if (!run.activity.empty()) {
    nlohmann::ordered_json activity = nlohmann::ordered_json::array();
    for (const LevelActivity& a : run.activity)
      activity.push_back({{"level", a.level},
                          {"bytes", a.bytes.value},
                          {"busy_cycles", a.busy.value},
                          {"utilization", a.utilization}});
    j["activity"] = activity;
  }
  if (!run.engine_notes.empty()) j["engine_notes"] = run.engine_notes;
  if (!run.workload_notes.empty()) j["workload_notes"] = run.workload_notes;
  if (!run.notes.empty()) j["notes"] = run.notes;
}

void from_json(const nlohmann::ordered_json& j, RunResult& run) {
  const auto& p = j.at("provenance");
  run.provenance.coda_version = p.at("coda_version").get<std::string>();
  run.provenance.engine = p.at("engine").get<std::string>();
  run.provenance.inputs.clear();
  for (const auto& in : p.at("inputs"))
    run.provenance.inputs.push_back({in.at("role").get<std::string>(),
                                     in.at("path").get<std::string>(),
                                     in.at("hash").get<std::string>()});
  run.arch = j.at("arch").get<std::string>();
  run.workload = j.at("workload").get<std::string>();
  run.clock.value = j.at("clock_hz").get<double>();
  run.processing_elements = j.at("processing_elements").get<std::uint64_t>();
  run.area.value = j.value("area_mm2", 0.0);
  run.total = j.at("total").get<Cost>();
  run.ops = j.at("ops").get<std::vector<OpResult>>();
  run.skipped.clear();
  for (const auto& s : j.at("skipped"))
    run.skipped.push_back({s.at("name").get<std::string>(), s.at("reason").get<std::string>()});
  run.fusion_mode = "none";
  run.gemm_path.clear();
  run.attention_impl.clear();
  run.decode_attention.clear();
  if (const auto k = j.find("kernels"); k != j.end()) {  // absent on archs without tensor cores
    run.gemm_path = k->at("gemm_path").get<std::string>();
    run.attention_impl = k->at("attention").get<std::string>();
    run.decode_attention = k->value("decode_attention", std::string{});  // absent before it
  }
  run.launch.clear();
  run.host_issue = run.host_wait = Seconds{};
  if (const auto l = j.find("launch"); l != j.end()) {  // absent unless launched eagerly
    run.launch = l->at("mode").get<std::string>();
    run.host_issue.value = l->at("issue_time_s").get<double>();
    run.host_wait.value = l->at("host_wait_s").get<double>();
  }
  run.fusion.clear();
  run.fusion_rejected.clear();
  if (const auto f = j.find("fusion"); f != j.end()) {  // absent in results written before it
    run.fusion_mode = f->at("mode").get<std::string>();
    for (const auto& g : f->at("groups"))
      run.fusion.push_back({g.at("kind").get<std::string>(),
                            g.at("ops").get<std::vector<std::string>>(),
                            Bytes{g.at("dram_bytes_saved").get<std::uint64_t>()}});
    for (const auto& r : f->at("rejected"))
      run.fusion_rejected.push_back({r.at("kind").get<std::string>(),
                                     r.at("ops").get<std::vector<std::string>>(),
                                     r.at("reason").get<std::string>()});
  }
  run.residency.reset();
  if (const auto r = j.find("residency"); r != j.end()) {  // absent where none was planned
    const auto bytes = [](const nlohmann::ordered_json& o, const char* key) {
      return Bytes{o.at(key).get<std::uint64_t>()};
    };
    Residency residency;
    residency.activations = r->at("activations").get<bool>();
    residency.on_chip = bytes(*r, "on_chip_bytes");
    for (const auto& t : r->at("kept"))
      residency.kept.push_back({t.at("tensor").get<std::string>(), bytes(t, "bytes"),
                                t.at("producer").get<std::string>(),
                                t.at("last_reader").get<std::string>(),
                                bytes(t, "dram_bytes_saved")});
    for (const auto& t : r->at("rejected"))
      residency.rejected.push_back({t.at("tensor").get<std::string>(), bytes(t, "bytes"),
                                    t.at("reason").get<std::string>()});
    if (const auto w = r->find("weight_cache"); w != r->end())
      residency.weights = CachedWeights{w->at("levels").get<std::vector<std::string>>(),
                                        bytes(*w, "capacity_bytes"),
                                        bytes(*w, "reserve_bytes"),
                                        bytes(*w, "budget_bytes"),
                                        bytes(*w, "cached_bytes"),
                                        bytes(*w, "streamed_bytes"),
                                        w->at("tensors_cached").get<std::uint64_t>(),
                                        w->at("tensors_streamed").get<std::uint64_t>(),
                                        w->at("first_streamed").get<std::string>(),
                                        bytes(*w, "dram_bytes_saved")};
    run.residency = std::move(residency);
  }
  run.mapper = j.value("mapper", std::string("fixed"));  // absent in results written before it
  run.memory = {};
  if (const auto m = j.find("memory"); m != j.end()) {
    const auto bytes = [&](const char* key) { return Bytes{m->at(key).get<std::uint64_t>()}; };
    const std::string status = m->at("status").get<std::string>();
    const std::optional<FitStatus> fit = parse_fit_status(status);
    if (!fit)
      throw std::runtime_error(fmt::format("memory.status '{}' is not one of {}", status,
                                           fit_status_names()));
    run.memory = {*fit,                               bytes("needed_bytes"),
                  bytes("available_bytes"),           bytes("weights_bytes"),
                  bytes("kv_cache_bytes"),            bytes("optimizer_state_bytes"),
                  bytes("activations_bytes"),         bytes("on_chip_bytes"),
                  m->at("ops_over_on_chip").get<std::uint64_t>(),
                  m->at("reason").get<std::string>()};
  }
  run.stalls.reset();
  if (const auto s = j.find("stalls"); s != j.end()) run.stalls = stalls_from(*s);
  run.activity.clear();
  if (const auto a = j.find("activity"); a != j.end())
    for (const auto& level : *a)
      run.activity.push_back({level.at("level").get<std::string>(),
                              Bytes{level.at("bytes").get<std::uint64_t>()},
                              Cycles{level.at("busy_cycles").get<std::uint64_t>()},
                              level.at("utilization").get<double>()});
  run.engine_notes = j.value("engine_notes", std::vector<std::string>());
  run.workload_notes = j.value("workload_notes", std::vector<std::string>());
  run.notes = j.value("notes", std::vector<std::string>());
}

}  // namespace coda::results
