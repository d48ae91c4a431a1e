#include <iostream>
#include <span>

#include "cli/commands.h"

int main(int argc, char** argv) {
  return coda::cli::run_main(std::span<const char* const>(argv, static_cast<std::size_t>(argc)),
                             std::cout, std::cerr);
}
