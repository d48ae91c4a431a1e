#pragma once
// CODA_CHECK: an internal invariant (a bug in coda if it fails), never a check of user input.
// User input errors are Diagnostics; see core/diagnostics.h.

#include <stdexcept>
#include <string>

namespace coda {
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};
}  // namespace coda

#define CODA_CHECK(condition)                                                               \
  do {                                                                                      \
    if (!(condition))                                                                       \
      throw ::coda::InternalError(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                                  ": internal error: check failed: " #condition);           \
  } while (false)
