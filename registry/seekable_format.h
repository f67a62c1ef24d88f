// zstd's seekable format (contrib/seekable_format/zstd_seekable_compression_format.md): the
// blob's independent frames are followed by one skippable frame holding, per frame, its
// compressed and decompressed size, so an offset maps to a frame without reading the others.
// We write no per-entry checksums: every frame carries zstd's own content checksum instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace vkllm::registry::seekable {

inline constexpr uint32_t kSkippableMagic = 0x184D2A5E;
inline constexpr uint32_t kSeekableMagic = 0x8F92EAB1;
inline constexpr size_t kFooterSize = 9;
inline constexpr size_t kSkippableHeaderSize = 8;
// Larger frames than this are refused when reading, so a corrupt table cannot ask for huge
// allocations.
inline constexpr uint32_t kMaxFrameSize = uint32_t{1} << 30;

struct FrameSizes {
  uint32_t compressed = 0;
  uint32_t decompressed = 0;
};

struct Frame {
  uint64_t compressed_offset = 0;
  uint64_t decompressed_offset = 0;
  uint32_t compressed_size = 0;
  uint32_t decompressed_size = 0;
};

// The complete skippable frame to append after the data frames.
std::vector<std::byte> encode_table(std::span<const FrameSizes> frames);

// Reads and validates the table at the end of an open file; throws RegistryError(corrupt)
// naming the file and the field that is wrong.
std::vector<Frame> read_table(int fd, uint64_t file_size, const std::filesystem::path& path);

}  // namespace vkllm::registry::seekable
