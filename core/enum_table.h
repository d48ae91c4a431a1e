#pragma once
// One table of (name, value) pairs per enum, in the order hints list the names: the YAML readers
// take it as an EnumTable (core/yaml_reader.h), and each enum's to_string, parse_* and *_list
// are these three lookups over it, instead of a loop of their own.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace coda {

// Maps the strings a config may hold to an enum; the order is what error hints list.
template <class E>
using EnumTable = std::span<const std::pair<std::string_view, E>>;

// The name of `value` in `table` (an array or span of pairs), or `unknown` when it has none.
template <class Table, class E>
std::string_view enum_name(const Table& table, E value, std::string_view unknown = "?") {
  for (const auto& [name, v] : table)
    if (v == value) return name;
  return unknown;
}

// The value named `name` in `table`, or nullopt.
template <class Table>
auto enum_value(const Table& table, std::string_view name)
    -> std::optional<typename Table::value_type::second_type> {
  for (const auto& [n, v] : table)
    if (n == name) return v;
  return std::nullopt;
}

// "a, b, c": the names in table order, for hints.
template <class Table>
std::string enum_names(const Table& table) {
  std::string out;
  for (const auto& [name, v] : table) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace coda
