#pragma once
// `coda completion bash|zsh`: a shell completion script for coda, generated from the command
// line itself (every subcommand, its options, and the values of options that take one of a set),
// so it cannot drift from --help. Load it with
//   source <(build/coda completion bash)        # or save it as
//   ~/.local/share/bash-completion/completions/coda
// zsh: source <(build/coda completion zsh) (bash's script through zsh's bashcompinit).

#include <string>
#include <string_view>

namespace CLI {
class App;
}

namespace coda::cli {

// The script for `shell` ("bash" or "zsh") completing `app`'s subcommands, their long options,
// an option's values where its validator names a set ({a,b,c}), and file names otherwise.
std::string completion_script(const CLI::App& app, std::string_view shell);

CLI::App* add_completion_command(CLI::App& app, std::string& shell);

}  // namespace coda::cli
