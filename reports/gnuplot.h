#pragma once
// Runs gnuplot as a child process: the script goes in on stdin, the chart (an SVG document, with
// `set terminal svg`) comes back from stdout. Nothing is written to disk and nothing printed.

#include <chrono>
#include <string>
#include <string_view>

namespace coda::reports {

struct GnuplotOutput {
  bool ok = false;
  std::string svg;    // gnuplot's stdout
  std::string error;  // when !ok: what went wrong, with gnuplot's stderr
};

// Runs `program` (looked up on PATH) with no arguments, writes `script` to its stdin, closes it
// and reads stdout and stderr until the process exits. Fails (never throws) when the program is
// not installed (the message names the Debian package gnuplot-nox), when it exits non-zero or
// writes nothing, or when it runs past `timeout` (it is then killed).
GnuplotOutput run_gnuplot(std::string_view script, std::chrono::milliseconds timeout,
                          const std::string& program = "gnuplot");

}  // namespace coda::reports
