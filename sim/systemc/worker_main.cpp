// coda-systemc-worker: runs one SystemC simulation of a chip plan and exits. SystemC elaborates
// one simulation per process, so the SystemC engine (systemc_engine.cpp) starts this program for
// every run, with posix_spawn: a fork of a multithreaded process (a sweep runs points on several
// threads) may only call async-signal-safe functions before exec, and the worker that forked
// coda itself and then allocated deadlocked in the allocator's lock under AddressSanitizer.
//
// Protocol. Standard input: the plan as JSON (sim/timing/chip_plan.h's ChipPlan), read to its
// end. Standard output: "ok\n" and the outcome as JSON (chip_run.h's ChipOutcome), or "error\n"
// and why; the exit status is 0 with "ok", 1 with "error". SystemC's reports to std::cout go to
// /dev/null, so the output carries nothing but the answer; its banner goes to standard error
// unless SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1, which the engine sets.
//
// libsystemc's shared library defines main(), which sets SystemC up and calls sc_main() (declared
// extern "C" by SystemC's sc_main.h, so here too).

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "core/text.h"
#include "sim/systemc/chip_model.h"
#include "sim/timing/chip_plan.h"
#include "sim/timing/chip_run.h"

namespace {

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

extern "C" int sc_main(int /*argc*/, char* /*argv*/[]) {
  // The answer goes to the original standard output; SystemC's std::cout to /dev/null.
  const int answer = ::dup(STDOUT_FILENO);
  if (answer < 0) return 2;
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, STDOUT_FILENO);
    ::close(null);
  }
  std::string message;
  int status = 0;
  try {
    const std::string input{std::istreambuf_iterator<char>(std::cin),
                            std::istreambuf_iterator<char>()};
    const auto plan = nlohmann::ordered_json::parse(input).get<coda::sim::timing::ChipPlan>();
    const nlohmann::ordered_json outcome =
        coda::sim::systemc::simulate_chip(plan.chip, plan.works);
    message = "ok\n" + coda::dump_json(outcome);
  } catch (const std::exception& e) {
    message = std::string("error\n") + e.what();
    status = 1;
  }
  return write_all(answer, message) ? status : 3;
}
