#include "cli/completion_command.h"

#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace coda::cli {

namespace {

// The choices an option's type name lists, as CLI11 writes a set validator: "TEXT:{a,b,c}".
std::vector<std::string> choices(const CLI::Option& option) {
  const std::string type = option.get_type_name();
  const auto open = type.find(":{");
  const auto close = type.find('}', open == std::string::npos ? 0 : open);
  std::vector<std::string> out;
  if (open == std::string::npos || close == std::string::npos) return out;
  std::string item;
  for (std::size_t i = open + 2; i < close; ++i) {
    if (type[i] == ',') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else if (type[i] != ' ') {
      item += type[i];
    }
  }
  if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<std::string> long_options(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* option : app.get_options())
    if (!option->get_group().empty())  // an empty group hides an option from --help
      for (const std::string& name : option->get_lnames()) out.push_back("--" + name);
  return out;
}

// The case arms of one command (`sub` empty: coda itself): its options, and one arm per option
// with a set of values.
void command_arms(const CLI::App& app, const std::string& sub, std::string& options,
                  std::string& values) {
  options += fmt::format("    \"{}\") opts=\"{}\" ;;\n", sub, fmt::join(long_options(app), " "));
  for (const CLI::Option* option : app.get_options()) {
    const std::vector<std::string> set = choices(*option);
    if (set.empty()) continue;
    for (const std::string& name : option->get_lnames())
      values += fmt::format("    \"{}:--{}\") COMPREPLY=($(compgen -W \"{}\" -- \"$cur\")); return ;;\n",
                            sub, name, fmt::join(set, " "));
  }
}

std::string bash_script(const CLI::App& app) {
  std::vector<std::string> subcommands;
  std::string options, values;
  command_arms(app, "", options, values);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    subcommands.push_back(sub->get_name());
    command_arms(*sub, sub->get_name(), options, values);
  }
  return fmt::format(R"(# bash completion for coda, written by `coda completion bash` from coda's own command line.
_coda() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" sub="" opts="" i
  # The subcommand: the first word after coda that is not an option.
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${{COMP_WORDS[i]}}" in -*) ;; *) sub="${{COMP_WORDS[i]}}"; break ;; esac
  done
  # An option that takes one of a set: its values.
  case "$sub:$prev" in
{}  esac
  case "$sub" in
{}    *) opts="" ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  elif [[ -z "$sub" ]]; then
    COMPREPLY=($(compgen -W "{}" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}}
complete -o filenames -o bashdefault -F _coda coda
)",
                     values, options, fmt::join(subcommands, " "));
}

}  // namespace

std::string completion_script(const CLI::App& app, std::string_view shell) {
  if (shell == "zsh")
    return "# zsh completion for coda: bash's script through zsh's bashcompinit.\n"
           "autoload -U +X bashcompinit && bashcompinit\n" +
           bash_script(app);
  return bash_script(app);
}

CLI::App* add_completion_command(CLI::App& app, std::string& shell) {
  CLI::App* cmd = app.add_subcommand(
      "completion",
      "Print a shell completion script for coda: source <(coda completion bash), or zsh");
  cmd->add_option("shell", shell, "The shell: bash or zsh")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh"}));
  return cmd;
}

}  // namespace coda::cli
