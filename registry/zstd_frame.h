// The zstd side of the seekable blob format (seekable_format.h holds the seek table): one
// frame compressed with a content checksum and its size in the header, and one frame read back
// and checked against what the seek table promises. Shared by BlobWriter (compresses),
// BlobReader (decompresses) and a writer's commit-time raw fallback. Internal to registry/.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "registry/seekable_format.h"

namespace vkllm::registry {

// A zstd blob's file name ends so: "sha256-<hex>.zst" beside the raw "sha256-<hex>".
inline constexpr std::string_view kZstdSuffix = ".zst";
bool is_zstd_name(const std::filesystem::path& p);

std::vector<std::byte> compress_frame(std::span<const std::byte> input, int level);

// Reads and decompresses frame `index` of the file `fd` (named `path` for errors); throws
// RegistryError(corrupt) unless it is exactly one complete zstd frame of the promised size.
std::vector<std::byte> decompress_frame(int fd, const std::filesystem::path& path,
                                        const seekable::Frame& f, size_t index);

}  // namespace vkllm::registry
