// Placeholders until each command family lands; each owner deletes its line here.
#include "server/cli/commands.h"

namespace vkllm::cli {
void add_serve_command(CLI::App&) {}
}  // namespace vkllm::cli
