#include "registry/seekable_format.h"

#include "registry/errors.h"
#include "registry/file_io.h"

namespace vkllm::registry::seekable {
namespace {

void put_le32(std::vector<std::byte>& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::byte>((value >> (8 * i)) & 0xff));
}

uint32_t get_le32(const std::byte* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

[[noreturn]] void corrupt(const std::filesystem::path& path, const std::string& why) {
  throw RegistryError(ErrorKind::corrupt, "corrupt blob " + path.string() + ": " + why);
}

}  // namespace

std::vector<std::byte> encode_table(std::span<const FrameSizes> frames) {
  std::vector<std::byte> out;
  uint64_t content = frames.size() * 8 + kFooterSize;
  out.reserve(kSkippableHeaderSize + content);
  put_le32(out, kSkippableMagic);
  put_le32(out, static_cast<uint32_t>(content));
  for (const auto& f : frames) {
    put_le32(out, f.compressed);
    put_le32(out, f.decompressed);
  }
  put_le32(out, static_cast<uint32_t>(frames.size()));
  out.push_back(std::byte{0});  // descriptor: no per-entry checksums
  put_le32(out, kSeekableMagic);
  return out;
}

std::vector<Frame> read_table(int fd, uint64_t file_size, const std::filesystem::path& path) {
  if (file_size < kSkippableHeaderSize + kFooterSize)
    corrupt(path, "file of " + std::to_string(file_size) + " bytes is too small for a seek table");
  std::byte footer[kFooterSize];
  if (pread_full(fd, footer, file_size - kFooterSize, path) != kFooterSize)
    corrupt(path, "short read of the seek table footer");
  if (get_le32(footer + 5) != kSeekableMagic) corrupt(path, "seekable magic number missing");
  uint32_t count = get_le32(footer);
  auto descriptor = static_cast<uint8_t>(footer[4]);
  if (descriptor & 0x7c)
    corrupt(path, "reserved bits set in seek table descriptor " + std::to_string(descriptor));
  const uint64_t entry_size = (descriptor & 0x80) ? 12 : 8;
  const uint64_t content = count * entry_size + kFooterSize;
  if (content + kSkippableHeaderSize > file_size)
    corrupt(path, "seek table of " + std::to_string(count) + " frames is larger than the file");
  const uint64_t table_start = file_size - content - kSkippableHeaderSize;
  std::vector<std::byte> table(content + kSkippableHeaderSize - kFooterSize);
  if (pread_full(fd, table, table_start, path) != table.size())
    corrupt(path, "short read of the seek table");
  if (get_le32(table.data()) != kSkippableMagic)
    corrupt(path,
            "seek table skippable frame magic missing at offset " + std::to_string(table_start));
  if (get_le32(table.data() + 4) != content)
    corrupt(path, "seek table frame size " + std::to_string(get_le32(table.data() + 4)) +
                      " does not match " + std::to_string(content));
  std::vector<Frame> frames(count);
  uint64_t compressed = 0, decompressed = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const std::byte* entry = table.data() + kSkippableHeaderSize + i * entry_size;
    Frame& f = frames[i];
    f.compressed_size = get_le32(entry);
    f.decompressed_size = get_le32(entry + 4);
    f.compressed_offset = compressed;
    f.decompressed_offset = decompressed;
    if (f.compressed_size == 0 || f.decompressed_size == 0 || f.decompressed_size > kMaxFrameSize ||
        f.compressed_size > kMaxFrameSize)
      corrupt(path, "frame " + std::to_string(i) + " has implausible sizes (compressed " +
                        std::to_string(f.compressed_size) + ", decompressed " +
                        std::to_string(f.decompressed_size) + ")");
    compressed += f.compressed_size;
    decompressed += f.decompressed_size;
  }
  if (compressed != table_start)
    corrupt(path, "frames cover " + std::to_string(compressed) +
                      " bytes but the seek table starts at " + std::to_string(table_start));
  return frames;
}

}  // namespace vkllm::registry::seekable
