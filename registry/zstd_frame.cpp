#include "registry/zstd_frame.h"

#include <zstd.h>

#include <memory>
#include <string>

#include "registry/errors.h"
#include "registry/file_io.h"

namespace vkllm::registry {
namespace fs = std::filesystem;

namespace {

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

}  // namespace

std::vector<std::byte> compress_frame(std::span<const std::byte> input, int level) {
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxDeleter> ctx{ZSTD_createCCtx()};
  ZSTD_CCtx_reset(ctx.get(), ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_contentSizeFlag, 1);
  std::vector<std::byte> out(ZSTD_compressBound(input.size()));
  size_t n = ZSTD_compress2(ctx.get(), out.data(), out.size(), input.data(), input.size());
  if (ZSTD_isError(n))
    throw RegistryError(ErrorKind::io,
                        std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

// zstd itself verifies the frame's content checksum; the checks here catch a seek table and
// file that disagree.
std::vector<std::byte> decompress_frame(int fd, const fs::path& path, const seekable::Frame& f,
                                        size_t index) {
  auto corrupt = [&](const std::string& why) {
    throw RegistryError(ErrorKind::corrupt, "corrupt blob " + path.string() + ": frame " +
                                                std::to_string(index) + " at offset " +
                                                std::to_string(f.compressed_offset) + ": " + why);
  };
  std::vector<std::byte> compressed(f.compressed_size);
  if (pread_full(fd, compressed, f.compressed_offset, path) != compressed.size())
    corrupt("file ends early");
  if (ZSTD_findFrameCompressedSize(compressed.data(), compressed.size()) != compressed.size())
    corrupt("not one complete zstd frame of " + std::to_string(f.compressed_size) + " bytes");
  unsigned long long content = ZSTD_getFrameContentSize(compressed.data(), compressed.size());
  if (content != f.decompressed_size) corrupt("frame header size disagrees with the seek table");
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> ctx{ZSTD_createDCtx()};
  std::vector<std::byte> out(f.decompressed_size);
  size_t n =
      ZSTD_decompressDCtx(ctx.get(), out.data(), out.size(), compressed.data(), compressed.size());
  if (ZSTD_isError(n)) corrupt(ZSTD_getErrorName(n));
  if (n != out.size()) corrupt("decompressed to " + std::to_string(n) + " bytes");
  return out;
}

bool is_zstd_name(const fs::path& p) {
  return p.extension() == kZstdSuffix;
}

}  // namespace vkllm::registry
