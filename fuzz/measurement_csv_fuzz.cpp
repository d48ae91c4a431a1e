// Fuzzes the measurement CSV reader: validation::read_measurements. The writer and the reader
// share one schema, so every row the reader accepts must survive a round trip: written back with
// write_measurement_row under write_measurement_header, it reads again, as the same number of
// rows, each with the same kernel, dtype, shape (defaults filled in), implementation class,
// counts, times and text fields.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz/fuzz_contract.h"
#include "validation/measurement.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace v = coda::validation;
  using coda::fuzz::require;
  coda::Diagnostics diags;
  const std::string file = "fuzz.csv";
  const auto rows = v::read_measurements(coda::fuzz::as_text(data, size), file, diags);
  coda::fuzz::check_contract(rows.has_value(), diags);
  if (!rows) return 0;

  std::ostringstream out;
  v::write_measurement_header(out);
  for (const v::Measurement& m : *rows) v::write_measurement_row(out, m);
  coda::Diagnostics again_diags;
  const auto again = v::read_measurements(out.str(), "round_trip.csv", again_diags);
  coda::fuzz::check_contract(again.has_value(), again_diags);
  require(again.has_value() && again->size() == rows->size());
  for (std::size_t i = 0; i < rows->size(); ++i) {
    const v::Measurement& a = (*rows)[i];
    const v::Measurement& b = (*again)[i];
    require(a.kernel == b.kernel && a.dtype == b.dtype && a.repetitions == b.repetitions &&
            a.warmup == b.warmup && a.passed == b.passed && a.buffer_sets == b.buffer_sets &&
            a.working_set_bytes == b.working_set_bytes && a.tiling == b.tiling &&
            a.device == b.device && a.date == b.date && a.source == b.source &&
            a.note == b.note && a.shape == b.shape && a.impl == b.impl && a.model == b.model &&
            a.software == b.software && a.derivation == b.derivation);
    for (const auto field : {&v::Measurement::median_us, &v::Measurement::min_us,
                             &v::Measurement::max_us, &v::Measurement::operations,
                             &v::Measurement::bytes, &v::Measurement::max_error,
                             &v::Measurement::tolerance})
      require(a.*field == b.*field || (std::isnan(a.*field) && std::isnan(b.*field)));
  }
  return 0;
}
