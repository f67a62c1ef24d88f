#include "engine/vulkan/pipeline_cache_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <vulkan/vulkan.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "shaders/embedded_spirv.h"

namespace vkllm::vk {
namespace {

constexpr char kMagic[8] = {'V', 'K', 'L', 'L', 'M', 'P', 'C', '1'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderBytes = 64;
// VkPipelineCacheHeaderVersionOne: headerSize, headerVersion, vendorID, deviceID, UUID.
constexpr size_t kVulkanHeaderBytes = 32;

class Fnv1a {
 public:
  void update(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 0x100000001b3ull;
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

uint64_t checksum(std::span<const std::byte> bytes) {
  Fnv1a h;
  h.update(bytes.data(), bytes.size());
  return h.value();
}

template <typename T>
void put(std::vector<std::byte>& out, size_t at, const T& v) {
  std::memcpy(out.data() + at, &v, sizeof(T));
}

template <typename T>
T get(std::span<const std::byte> in, size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof(T));
  return v;
}

DecodedPipelineCache reject(std::string why) {
  return {{}, std::move(why)};
}

std::string hex(uint64_t v, int digits) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path) {
  throw std::runtime_error(what + " " + path.string() + ": " + std::strerror(errno));
}

}  // namespace

std::string PipelineCacheKey::file_name() const {
  std::string uuid;
  for (uint8_t b : cache_uuid) uuid += hex(b, 2);
  return "pipelines-" + hex(vendor_id, 4) + "-" + hex(device_id, 4) + "-" + hex(driver_version, 8) +
         "-" + uuid + "-" + hex(spirv_hash, 16) + ".bin";
}

uint64_t embedded_spirv_hash() {
  Fnv1a h;
  for (const auto& f : shaders::embedded_files()) {
    if (!f.name) continue;
    h.update(f.name, std::strlen(f.name) + 1);
    const uint64_t size = f.size;
    h.update(&size, sizeof size);
    h.update(f.data, f.size);
  }
  return h.value();
}

std::vector<std::byte> encode_pipeline_cache_file(const PipelineCacheKey& key,
                                                  std::span<const std::byte> vulkan_data) {
  std::vector<std::byte> out(kHeaderBytes + vulkan_data.size());
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put(out, 8, kFormatVersion);
  put(out, 12, key.vendor_id);
  put(out, 16, key.device_id);
  put(out, 20, key.driver_version);
  std::memcpy(out.data() + 24, key.cache_uuid.data(), 16);
  put(out, 40, key.spirv_hash);
  put(out, 48, uint64_t{vulkan_data.size()});
  put(out, 56, checksum(vulkan_data));
  if (!vulkan_data.empty())
    std::memcpy(out.data() + kHeaderBytes, vulkan_data.data(), vulkan_data.size());
  return out;
}

DecodedPipelineCache decode_pipeline_cache_file(const PipelineCacheKey& key,
                                                std::span<const std::byte> file) {
  if (file.size() < kHeaderBytes) return reject("shorter than its header");
  if (std::memcmp(file.data(), kMagic, sizeof kMagic) != 0) return reject("not a vkllm cache");
  if (get<uint32_t>(file, 8) != kFormatVersion) return reject("unknown format version");
  if (get<uint32_t>(file, 12) != key.vendor_id || get<uint32_t>(file, 16) != key.device_id ||
      get<uint32_t>(file, 20) != key.driver_version ||
      std::memcmp(file.data() + 24, key.cache_uuid.data(), 16) != 0)
    return reject("made for another device or driver");
  if (get<uint64_t>(file, 40) != key.spirv_hash) return reject("made for other shaders");
  const auto payload = file.subspan(kHeaderBytes);
  if (get<uint64_t>(file, 48) != payload.size()) return reject("truncated or extended");
  if (get<uint64_t>(file, 56) != checksum(payload)) return reject("checksum mismatch");

  // The driver's own header, checked as the Vulkan spec lays it out: a cache from another
  // device must never reach vkCreatePipelineCache.
  if (payload.size() < kVulkanHeaderBytes) return reject("Vulkan header missing");
  const auto header_size = get<uint32_t>(payload, 0);
  if (header_size < kVulkanHeaderBytes || header_size > payload.size())
    return reject("Vulkan header length " + std::to_string(header_size) + " is invalid");
  if (get<uint32_t>(payload, 4) != VK_PIPELINE_CACHE_HEADER_VERSION_ONE)
    return reject("Vulkan header version " + std::to_string(get<uint32_t>(payload, 4)));
  if (get<uint32_t>(payload, 8) != key.vendor_id || get<uint32_t>(payload, 12) != key.device_id)
    return reject("Vulkan header names another device");
  if (std::memcmp(payload.data() + 16, key.cache_uuid.data(), 16) != 0)
    return reject("Vulkan header names another pipelineCacheUUID");
  return {std::vector<std::byte>(payload.begin(), payload.end()), {}};
}

DecodedPipelineCache read_pipeline_cache_file(const PipelineCacheKey& key,
                                              const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return reject("absent");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return reject("unreadable");
  return decode_pipeline_cache_file(key, std::as_bytes(std::span(bytes)));
}

void write_pipeline_cache_file(const std::filesystem::path& path,
                               std::span<const std::byte> bytes) {
  static std::atomic<uint64_t> counter{0};
  const auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir.string() + ": " + ec.message());
  auto temp = path;
  temp += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create", temp);
  auto abandon = [&](const char* what) {
    const int saved = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    errno = saved;
    fail(what, temp);
  };
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) abandon("cannot write");
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) abandon("cannot fsync");
  if (::close(fd) != 0) {
    ::unlink(temp.c_str());
    fail("cannot close", temp);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    errno = saved;
    fail("cannot rename to", path);
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // the rename is durable once the directory is
    ::close(dfd);
  }
}

}  // namespace vkllm::vk
