#include "engine/gguf/gguf_mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

namespace vkllm::gguf {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

int UniqueFd::release() {
  return std::exchange(fd_, -1);
}

namespace {
[[noreturn]] void throw_errno(const char* what, const std::filesystem::path& path) {
  throw std::system_error(errno, std::generic_category(),
                          std::string(what) + " '" + path.string() + "'");
}
}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) {
  fd_ = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd_.get() < 0) throw_errno("cannot open", path);
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) throw_errno("cannot stat", path);
  if (!S_ISREG(st.st_mode)) {
    throw std::system_error(std::make_error_code(std::errc::invalid_argument),
                            "not a regular file '" + path.string() + "'");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) return;  // mmap rejects length 0; an empty span is the honest view.
  addr_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_.get(), 0);
  if (addr_ == MAP_FAILED) {
    addr_ = nullptr;
    size_ = 0;
    throw_errno("cannot mmap", path);
  }
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : fd_(std::move(o.fd_)),
      addr_(std::exchange(o.addr_, nullptr)),
      size_(std::exchange(o.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    unmap();
    fd_ = std::move(o.fd_);
    addr_ = std::exchange(o.addr_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  unmap();
}

void MappedFile::unmap() {
  if (addr_) ::munmap(addr_, size_);
  addr_ = nullptr;
  size_ = 0;
}

}  // namespace vkllm::gguf
