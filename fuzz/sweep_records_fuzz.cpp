// Fuzzes dse::decode_records, which rank 0 of an MPI sweep runs on every message the other ranks
// send (dse/sweep_store.h): any bytes are either refused or decoded, and what it decodes is
// exactly what encode_records writes for the records (the form has one encoding per value).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz/fuzz_contract.h"
#include "dse/sweep_store.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  const auto records = coda::dse::decode_records(bytes);
  if (records) {
    const std::vector<std::uint8_t> again = coda::dse::encode_records(*records);
    coda::fuzz::require(std::equal(again.begin(), again.end(), bytes.begin(), bytes.end()));
  }
  return 0;
}
