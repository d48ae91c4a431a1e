#include "sim/systemc/chip_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <tlm_utils/tlm_quantumkeeper.h>

#include "sim/timing/dram_model.h"
#include "sim/timing/link_model.h"
#include "sim/timing/tile_executor.h"

namespace coda::sim::systemc {
namespace {

using sc_core::sc_time;

// Cycles to SystemC time. Timing math stays in exact cycles (doubles) inside the plain classes;
// SystemC time, at its picosecond resolution, only orders the cores' requests.
class Clock {
 public:
  explicit Clock(double hz) : period_ps_(1e12 / hz) {}
  sc_time at(double cycles) const { return sc_time(cycles * period_ps_, sc_core::SC_PS); }

 private:
  double period_ps_;
};

// Carries a transfer's issue cycle and size to the memory system, and its timing back. The
// payload's data pointer is a dummy: the model moves time, not data.
struct TimingExtension : tlm::tlm_extension<TimingExtension> {
  double issue = 0;
  std::uint64_t bytes = 0;
  timing::AccessTiming timing;
  tlm::tlm_extension_base* clone() const override { return new TimingExtension(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const TimingExtension&>(other);
  }
};

class DramTarget : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<DramTarget> socket;

  DramTarget(const sc_core::sc_module_name& name, const timing::DramParams& params,
             const Clock& clock)
      : sc_module(name), socket("socket"), dram_(params), clock_(clock) {
    socket.register_b_transport(this, &DramTarget::b_transport);
  }
  const timing::DramModel& dram() const { return dram_; }

 private:
  void b_transport(tlm::tlm_generic_payload& trans, sc_time& delay) {
    auto* ext = trans.get_extension<TimingExtension>();
    ext->timing = dram_.access_timed(trans.get_address(), ext->bytes, ext->issue);
    delay += clock_.at(ext->timing.arrival - ext->issue);
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
  }

  timing::DramModel dram_;
  const Clock& clock_;
};

class Interconnect : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<Interconnect> from_cores;
  tlm_utils::simple_initiator_socket<Interconnect> to_dram;

  Interconnect(const sc_core::sc_module_name& name, const timing::ChipParams& chip)
      : sc_module(name), from_cores("from_cores"), to_dram("to_dram"), shared_(chip.link_shared) {
    const std::size_t links = chip.link ? (chip.link_shared ? 1 : chip.cores) : 0;
    for (std::size_t i = 0; i < links; ++i) links_.emplace_back(*chip.link);
    from_cores.register_b_transport(this, &Interconnect::b_transport);
  }
  const std::vector<timing::LinkModel>& links() const { return links_; }

 private:
  void b_transport(int core, tlm::tlm_generic_payload& trans, sc_time& delay) {
    auto* ext = trans.get_extension<TimingExtension>();
    if (links_.empty()) {
      to_dram->b_transport(trans, delay);
      return;
    }
    timing::LinkModel& link = links_[shared_ ? 0 : static_cast<std::size_t>(core)];
    const double moved = link.transfer(ext->bytes, ext->issue);
    to_dram->b_transport(trans, delay);
    const double from_dram = ext->timing.arrival;
    const double arrival = std::max(from_dram, moved) + link.latency_cycles();
    ext->timing.network = arrival - from_dram;
    ext->timing.arrival = arrival;
  }

  bool shared_;
  std::vector<timing::LinkModel> links_;
};

// What the cores share: the ops, their timings, and the barrier between ops.
struct ChipState {
  const timing::ChipParams& chip;
  const std::vector<timing::OpWork>& works;
  std::vector<timing::TileLayout> layouts;
  timing::ChipOutcome outcome;
  std::uint32_t arrived = 0;
  double next_start = 0;
  sc_core::sc_event op_done;
};

class Core : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<Core> socket;

  SC_HAS_PROCESS(Core);
  Core(const sc_core::sc_module_name& name, std::uint32_t id, ChipState& state,
       const Clock& clock)
      : sc_module(name), socket("socket"), id_(id), state_(state), clock_(clock) {
    SC_THREAD(run);
  }

 private:
  void run() {
    tlm_utils::tlm_quantumkeeper keeper;
    keeper.reset();
    tlm::tlm_generic_payload trans;
    TimingExtension ext;
    unsigned char dummy = 0;
    trans.set_data_ptr(&dummy);
    trans.set_streaming_width(1);
    trans.set_extension(&ext);
    // The payload frees its extensions when destroyed; this one lives on the stack.
    struct Release {
      tlm::tlm_generic_payload& trans;
      TimingExtension& ext;
      ~Release() { trans.clear_extension(&ext); }
    } release{trans, ext};
    const timing::MemoryPort port = [&](std::uint64_t address, std::uint64_t bytes, double now,
                                        bool write) {
      ext.issue = now;
      ext.bytes = bytes;
      ext.timing = {};
      trans.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
      trans.set_address(address);
      trans.set_data_length(static_cast<unsigned>(
          std::min<std::uint64_t>(bytes, std::numeric_limits<unsigned>::max())));
      trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
      const sc_time issue = clock_.at(now);
      const sc_time offset =
          issue > sc_core::sc_time_stamp() ? issue - sc_core::sc_time_stamp() : sc_core::SC_ZERO_TIME;
      keeper.set(offset);
      sc_time delay = offset;
      socket->b_transport(trans, delay);
      ++state_.outcome.stats.transactions;
      if (keeper.need_sync()) {
        keeper.sync();
        ++state_.outcome.stats.syncs;
      }
      return ext.timing;
    };

    for (std::size_t i = 0; i < state_.works.size(); ++i) {
      const timing::OpWork& work = state_.works[i];
      const double start = state_.next_start;
      if (const auto share = timing::share_of(work, id_, state_.chip.cores)) {
        const timing::TileRun run =
            timing::execute_share(work.program, state_.layouts[i], *share,
                                  state_.chip.double_buffered, start + work.launch_cycles, port);
        state_.outcome.stats.steps += run.steps;
        std::vector<timing::TileRun>& shares = state_.outcome.ops[i].shares;
        if (shares.size() <= id_) shares.resize(id_ + 1);
        shares[id_] = run;
        state_.outcome.ops[i].end = std::max(state_.outcome.ops[i].end, run.cycles);
      }
      // Wait, in SystemC time, until this core is done, then for every other core.
      keeper.sync();
      const sc_time done = clock_.at(std::max(state_.outcome.ops[i].end, start));
      if (done > sc_core::sc_time_stamp()) wait(done - sc_core::sc_time_stamp());
      if (++state_.arrived == state_.chip.cores) {
        state_.arrived = 0;
        state_.outcome.ops[i].end = std::max(state_.outcome.ops[i].end, start);
        state_.next_start = state_.outcome.ops[i].end;
        state_.op_done.notify(sc_core::SC_ZERO_TIME);
      } else {
        wait(state_.op_done);
      }
    }
  }

  std::uint32_t id_;
  ChipState& state_;
  const Clock& clock_;
};

}  // namespace

timing::ChipOutcome simulate_chip(const timing::ChipParams& chip,
                                  const std::vector<timing::OpWork>& works,
                                  double quantum_cycles) {
  const Clock clock(chip.clock_hz);
  ChipState state{chip, works, {}, {}, 0, 0, {}};
  state.outcome.ops.resize(works.size());
  for (const timing::OpWork& work : works)
    state.layouts.emplace_back(work.program, 0, chip.dram.row_bytes);
  tlm::tlm_global_quantum::instance().set(clock.at(quantum_cycles));

  DramTarget dram("dram", chip.dram, clock);
  Interconnect interconnect("interconnect", chip);
  interconnect.to_dram.bind(dram.socket);
  std::vector<std::unique_ptr<Core>> cores;
  for (std::uint32_t c = 0; c < chip.cores; ++c) {
    cores.push_back(std::make_unique<Core>(("core" + std::to_string(c)).c_str(), c, state, clock));
    cores.back()->socket.bind(interconnect.from_cores);
  }
  sc_core::sc_start();

  // Op starts: each op begins where the previous one ended.
  double start = 0;
  for (timing::OpTiming& op : state.outcome.ops) {
    op.start = start;
    op.end = std::max(op.end, start);
    start = op.end;
  }
  const double total = start;
  const auto utilization = [total](double busy, double units) {
    return total > 0 && units > 0 ? busy / (units * total) : 0.0;
  };
  const timing::DramStats& d = dram.dram().stats();
  state.outcome.activity.push_back(
      {"dram", Bytes{d.bytes}, Cycles{static_cast<std::uint64_t>(std::llround(d.busy_cycles))},
       utilization(d.busy_cycles, chip.dram.channels)});
  if (!interconnect.links().empty()) {
    double busy = 0;
    std::uint64_t bytes = 0;
    for (const timing::LinkModel& link : interconnect.links()) {
      busy += link.busy_cycles();
      bytes += link.bytes();
    }
    state.outcome.activity.push_back(
        {chip.link_shared ? "sm_to_l2" : "noc", Bytes{bytes},
         Cycles{static_cast<std::uint64_t>(std::llround(busy))},
         utilization(busy, static_cast<double>(interconnect.links().size()))});
  }
  return state.outcome;
}

}  // namespace coda::sim::systemc
