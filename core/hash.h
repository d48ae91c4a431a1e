#pragma once
// Content hashes for provenance: FNV-1a 64. Not cryptographic; stable across platforms and runs.

#include <cstdint>
#include <string_view>

namespace coda {

constexpr std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

}  // namespace coda
