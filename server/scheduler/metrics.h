// Process-wide metrics in the Prometheus text format (/metrics): counters, gauges and histograms
// with labels. Updates are cheap (one mutex, no allocation for existing series) and thread-safe;
// the engine threads update them once per step, the HTTP layer once per request.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vkllm::sched {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class Metrics {
 public:
  enum class Kind { counter, gauge, histogram };

  // Declares a family (name, HELP text, buckets for histograms); the built-in families are
  // declared by the constructor.
  void declare(std::string name, Kind kind, std::string help, std::vector<double> buckets = {});

  void add(std::string_view name, const MetricLabels& labels, double value = 1.0);  // counter
  void set(std::string_view name, const MetricLabels& labels, double value);        // gauge
  void observe(std::string_view name, const MetricLabels& labels, double value);    // histogram
  // Removes every series of `name` whose labels include `label` (an unloaded model's gauges).
  void forget(std::string_view name, const std::pair<std::string, std::string>& label);

  // Current value of a counter or gauge series (0 when absent); for tests and the CLI.
  double value(std::string_view name, const MetricLabels& labels) const;

  std::string render() const;

  Metrics();

 private:
  struct Series {
    double value = 0;  // counter/gauge; histogram: sum
    uint64_t count = 0;
    std::vector<uint64_t> buckets;
  };
  struct Family {
    Kind kind;
    std::string help;
    std::vector<double> bounds;
    std::map<std::string, Series> series;  // key: rendered label set `{a="x",b="y"}`
  };
  Family& family(std::string_view name);
  static std::string label_key(const MetricLabels& labels);

  mutable std::mutex mutex_;
  std::map<std::string, Family, std::less<>> families_;
};

// The server's registry.
Metrics& metrics();

}  // namespace vkllm::sched
