#include "registry/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include "registry/errors.h"

namespace vkllm::registry {
namespace {

[[noreturn]] void fail(const char* what, const std::filesystem::path& path) {
  int error = errno;
  throw RegistryError(ErrorKind::io,
                      std::string(what) + " " + path.string() + ": " + std::strerror(error));
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd open_read(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open", path);
  return UniqueFd(fd);
}

UniqueFd create_exclusive(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create", path);
  return UniqueFd(fd);
}

UniqueFd open_read_write(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) fail("cannot open", path);
  return UniqueFd(fd);
}

void write_all(int fd, std::span<const std::byte> bytes, const std::filesystem::path& path) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write", path);
    }
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
}

void pwrite_all(int fd, std::span<const std::byte> bytes, uint64_t offset,
                const std::filesystem::path& path) {
  while (!bytes.empty()) {
    ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write", path);
    }
    bytes = bytes.subspan(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
}

size_t pread_full(int fd, std::span<std::byte> bytes, uint64_t offset,
                  const std::filesystem::path& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n =
        ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot read", path);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

uint64_t file_size(int fd, const std::filesystem::path& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail("cannot stat", path);
  return static_cast<uint64_t>(st.st_size);
}

void fsync_fd(int fd, const std::filesystem::path& path) {
  if (::fsync(fd) != 0) fail("cannot fsync", path);
}

void fsync_directory(const std::filesystem::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("cannot open directory", dir);
  UniqueFd guard(fd);
  if (::fsync(fd) != 0) fail("cannot fsync directory", dir);
}

std::string random_name(std::string_view prefix, std::string_view suffix) {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  // The pid keeps a forked child (whose generator state is a copy) from repeating its parent's
  // names.
  uint64_t value = rng() ^ (counter.fetch_add(1) * 0x9e3779b97f4a7c15ULL) ^
                   (static_cast<uint64_t>(::getpid()) * 0xc2b2ae3d27d4eb4fULL);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(prefix);
  for (int i = 0; i < 16; ++i) out.push_back(kHex[(value >> (4 * i)) & 15]);
  out += suffix;
  return out;
}

}  // namespace vkllm::registry
