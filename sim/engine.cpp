#include "sim/engine.h"

#include <stdexcept>

#include <fmt/format.h>

namespace coda::sim {

void EngineRegistry::add(std::string name, Factory make) {
  if (factories_.contains(name))
    throw std::logic_error(fmt::format("engine '{}' registered twice", name));
  factories_.emplace(std::move(name), std::move(make));
}

std::unique_ptr<Engine> EngineRegistry::create(std::string_view name) const {
  const auto it = factories_.find(name);
  if (it == factories_.end())
    throw std::invalid_argument(fmt::format("unknown engine '{}'; known engines: {}", name,
                                            fmt::join(names(), ", ")));
  return it->second();
}

std::vector<std::string> EngineRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& entry : factories_) out.push_back(entry.first);
  return out;
}

}  // namespace coda::sim
