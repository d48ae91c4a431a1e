#pragma once
// Runs cases on the GPU: allocates and fills the buffers, warms up, times each repetition with
// CUDA events, checks a sample of the outputs against the CPU reference. No CUDA types here, so
// host code and tests include it freely; the implementation is runner.cu.

#include <memory>
#include <optional>
#include <string>

#include "validation/case.h"
#include "validation/measurement.h"

namespace coda::validation {

// The number of CUDA devices; 0 with `why` set ("cudaGetDeviceCount: no CUDA-capable device is
// detected") when there are none or the driver cannot be reached.
int cuda_device_count(std::string& why);

struct RunSettings {
  std::uint64_t seed = 1;
  std::uint32_t check_samples = 256;
  std::string date;    // written into every row
  std::string source;  // "measured: coda-bench <version>"
};

class Runner {
 public:
  // Opens device 0; nullptr with `why` set when there is none.
  static std::unique_ptr<Runner> open(std::string& why);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  const DeviceInfo& device() const;
  // Runs one case. A case that cannot run (out of memory, a CUDA error, a library without the
  // configuration) comes back with passed = false and `note` saying why; it does not throw.
  Measurement run(const Case& c, const RunSettings& settings);

 private:
  struct Impl;
  explicit Runner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace coda::validation
