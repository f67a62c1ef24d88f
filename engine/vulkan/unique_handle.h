// Move-only owner of one Vulkan handle; the destroy function runs exactly once.
#pragma once

#include <vulkan/vulkan.h>

#include <functional>
#include <utility>

namespace vkllm::vk {

template <typename Handle>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  UniqueHandle(Handle handle, std::function<void(Handle)> destroy)
      : handle_(handle), destroy_(std::move(destroy)) {}
  UniqueHandle(UniqueHandle&& other) noexcept
      : handle_(std::exchange(other.handle_, VK_NULL_HANDLE)),
        destroy_(std::move(other.destroy_)) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, VK_NULL_HANDLE);
      destroy_ = std::move(other.destroy_);
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() { reset(); }

  void reset() {
    if (handle_ != VK_NULL_HANDLE && destroy_) destroy_(handle_);
    handle_ = VK_NULL_HANDLE;
  }
  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != VK_NULL_HANDLE; }

 private:
  Handle handle_ = VK_NULL_HANDLE;
  std::function<void(Handle)> destroy_;
};

}  // namespace vkllm::vk
