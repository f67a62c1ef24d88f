// Directories whose absolute paths never reach a client: error texts (from any handler, any
// library) are cut so "<dir>/blobs/tmp/x: bad header" reads "blobs/tmp/x: bad header".
#pragma once

#include <filesystem>
#include <string>

namespace vkllm::http {

// Registers `dir` (the model store, say). Thread-safe; registering twice is harmless.
void hide_path(const std::filesystem::path& dir);

// `text` with every registered directory prefix removed.
std::string without_private_paths(std::string text);

}  // namespace vkllm::http
