// Test fixture: a real docker-registry (Debian's CNCF distribution server) on 127.0.0.1 with a
// free port and filesystem storage in a temp dir, started by tests/support/start-registry.sh
// (which integration scripts use directly) and stopped on destruction. The registry also stops
// by itself if the test process dies.
#pragma once

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "tests/support/temp_dir.h"

namespace vkllm::test {

class DockerRegistry {
 public:
  DockerRegistry() : dir_("vkllm-registry") {
    // The script sits next to this header; tests and benches are built knowing where that is.
    auto script = std::filesystem::path(VKLLM_TEST_SUPPORT_DIR) / "start-registry.sh";
    std::string command;
    command.append("'").append(script.string()).append("' '").append(dir_.path().string());
    command.append("' ").append(std::to_string(getpid()));
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) throw std::runtime_error("cannot run " + command);
    char line[128] = {};
    bool got = fgets(line, sizeof line, pipe) != nullptr;
    int status = pclose(pipe);
    unsigned port = 0;
    long pid = 0;
    if (!got || status != 0 || sscanf(line, "%u %ld", &port, &pid) != 2) {
      throw std::runtime_error("start-registry.sh failed (exit status " + std::to_string(status) +
                               "); is docker-registry installed (scripts/setup)?");
    }
    port_ = static_cast<uint16_t>(port);
    pid_ = static_cast<pid_t>(pid);
  }

  ~DockerRegistry() {
    if (pid_ <= 0) return;
    // Its storage is thrown away, so there is nothing to shut down gracefully. The registry is
    // not our child (the script started it), so poll instead of waitpid.
    kill(pid_, SIGKILL);
    for (int i = 0; i < 100 && running(pid_); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  DockerRegistry(const DockerRegistry&) = delete;
  DockerRegistry& operator=(const DockerRegistry&) = delete;

  uint16_t port() const { return port_; }
  // "127.0.0.1:<port>", as a model name's host part.
  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string url() const { return "http://" + host(); }
  const std::filesystem::path& dir() const { return dir_.path(); }

  // Where the registry keeps a blob's bytes (so tests can tamper with them).
  std::filesystem::path blob_data_path(std::string_view hex) const {
    return dir_.path() / "storage/docker/registry/v2/blobs/sha256" / std::string(hex.substr(0, 2)) /
           std::string(hex) / "data";
  }

 private:
  // Alive and not yet a zombie (whoever reaps it may take its time).
  static bool running(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return false;
    auto paren = line.rfind(')');
    return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
  }

  TempDir dir_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace vkllm::test
