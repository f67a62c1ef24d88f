// ModelManager's policy (server/scheduler/model_manager.h) through its loader seam: a loader of
// this file's own stands in for the engine (no GPU, no weights), with a device of a given size,
// so loading, sharing, keep_alive, eviction and refusal are driven in milliseconds.
#include "server/scheduler/model_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace vkllm::sched {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t GiB = uint64_t{1} << 30;

registry::ModelShow show_of(const std::string& name, char digest_digit) {
  registry::ModelShow show;
  show.name = registry::ModelName::parse(name);
  show.model_blob = registry::Digest::parse("sha256:" + std::string(64, digest_digit));
  return show;
}

// A device of `heap` bytes, of which other processes may hold some; every model needs and takes
// `size` bytes. finish() waits while the gate is closed, so a test can hold a load in progress.
class FakeLoader : public ModelLoader {
 public:
  struct State {
    uint64_t heap = 10 * GiB;
    uint64_t held_elsewhere = 0;
    bool host = false;
    std::map<std::string, uint64_t> sizes;  // by displayed name; 4 GiB unless named
    std::atomic<int> loads{0};
    std::shared_future<void> gate;  // valid: finish() waits for it
  };

  explicit FakeLoader(std::shared_ptr<State> state) : state_(std::move(state)) {}

  std::string describe() const override { return "a fake device"; }

  std::unique_ptr<PendingLoad> prepare(const registry::ModelShow& show) override {
    const auto it = state_->sizes.find(show.name.display());
    const uint64_t size = it == state_->sizes.end() ? 4 * GiB : it->second;
    return std::make_unique<Pending>(state_, ModelFootprint{size, state_->heap, state_->host});
  }

  uint64_t free_bytes(bool,
                      const std::map<std::string, std::shared_ptr<LoadedModel>>& loaded) override {
    uint64_t used = state_->held_elsewhere;
    for (const auto& [key, m] : loaded) used += m->device_bytes;
    return state_->heap > used ? state_->heap - used : 0;
  }

  void forget_device() override {}

 private:
  class Pending : public PendingLoad {
   public:
    Pending(std::shared_ptr<State> state, ModelFootprint fp)
        : state_(std::move(state)), footprint_(fp) {}
    const ModelFootprint& footprint() const override { return footprint_; }
    std::shared_ptr<LoadedModel> finish(uint64_t) override {
      ++state_->loads;
      if (state_->gate.valid()) state_->gate.wait();
      auto m = std::make_shared<LoadedModel>();
      m->device_bytes = footprint_.need_bytes;
      m->weight_bytes = footprint_.need_bytes;
      return m;
    }

   private:
    std::shared_ptr<State> state_;
    ModelFootprint footprint_;
  };

  std::shared_ptr<State> state_;
};

class ModelManagerTest : public ::testing::Test {
 protected:
  std::unique_ptr<ModelManager> make(ManagerOptions options = {}) {
    return std::make_unique<ModelManager>(options, std::make_unique<FakeLoader>(state));
  }
  static std::vector<std::string> names(const ModelManager& manager) {
    std::vector<std::string> out;
    for (const auto& r : manager.running()) out.push_back(r.show.name.display());
    std::sort(out.begin(), out.end());
    return out;
  }
  // Waits (briefly) until `pred` holds.
  template <class Pred>
  static bool eventually(Pred pred, std::chrono::milliseconds limit = 2000ms) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(1ms);
    }
    return true;
  }

  std::shared_ptr<FakeLoader::State> state = std::make_shared<FakeLoader::State>();
  const registry::ModelShow a = show_of("alpha", 'a');
  const registry::ModelShow b = show_of("beta", 'b');
  const registry::ModelShow c = show_of("gamma", 'c');
};

TEST_F(ModelManagerTest, LoadsOnFirstUseAndSharesTheInstance) {
  auto manager = make();
  ModelLease first = manager->acquire(a, std::nullopt);
  EXPECT_TRUE(first.loaded_now());
  ModelLease second = manager->acquire(a, std::nullopt);
  EXPECT_FALSE(second.loaded_now());
  EXPECT_EQ(&*first, &*second);
  EXPECT_EQ(state->loads, 1);
  // Another name for the same weights is the same instance.
  ModelLease alias = manager->acquire(show_of("alpha-copy", 'a'), std::nullopt);
  EXPECT_EQ(&*alias, &*first);
  const auto running = manager->running();
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].size, 4 * GiB);
}

TEST_F(ModelManagerTest, ConcurrentFirstRequestsShareOneLoad) {
  std::promise<void> open;
  state->gate = open.get_future().share();
  auto manager = make();
  std::vector<std::future<ModelLease>> requests;
  for (int i = 0; i < 4; ++i) {
    requests.push_back(std::async(std::launch::async, [&] { return manager->acquire(a, {}); }));
  }
  ASSERT_TRUE(eventually([&] { return state->loads.load() == 1; }));
  std::this_thread::sleep_for(10ms);  // the other requests are queued behind the load
  open.set_value();
  std::vector<ModelLease> leases;
  for (auto& r : requests) leases.push_back(r.get());
  EXPECT_EQ(state->loads, 1);
  int loaded_now = 0;
  for (const auto& lease : leases) {
    EXPECT_EQ(&*lease, &*leases[0]);
    loaded_now += lease.loaded_now() ? 1 : 0;
  }
  EXPECT_EQ(loaded_now, 1);
}

TEST_F(ModelManagerTest, KeepAliveExpiresAfterTheLastLease) {
  auto manager = make();
  const auto start = std::chrono::steady_clock::now();
  {
    ModelLease lease = manager->acquire(a, 30ms);
    std::this_thread::sleep_for(50ms);  // held past its keep_alive: still loaded
    EXPECT_EQ(names(*manager), std::vector<std::string>{"alpha:latest"});
  }
  const auto released = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return manager->running().empty(); }));
  EXPECT_GE(std::chrono::steady_clock::now() - released, 25ms);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 75ms);

  // keep_alive 0: unloaded as soon as the request ends; negative: never.
  { ModelLease lease = manager->acquire(b, 0ms); }
  EXPECT_TRUE(eventually([&] { return manager->running().empty(); }, 500ms));
  { ModelLease lease = manager->acquire(c, -1s); }
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(names(*manager), std::vector<std::string>{"gamma:latest"});
  // The unload request (keep_alive 0 with no prompt) unloads it once idle.
  EXPECT_TRUE(manager->request_unload(c));
  EXPECT_TRUE(eventually([&] { return manager->running().empty(); }, 500ms));
  EXPECT_FALSE(manager->request_unload(c));
  EXPECT_EQ(state->loads, 3);
}

TEST_F(ModelManagerTest, EvictsTheLeastRecentlyUsedIdleModelWhenMemoryRunsShort) {
  auto manager = make();  // 10 GiB, 4 GiB a model: two fit
  { ModelLease lease = manager->acquire(a, std::nullopt); }
  std::this_thread::sleep_for(2ms);
  { ModelLease lease = manager->acquire(b, std::nullopt); }
  std::this_thread::sleep_for(2ms);
  { ModelLease lease = manager->acquire(a, std::nullopt); }  // alpha is the recent one now
  ASSERT_EQ(names(*manager), (std::vector<std::string>{"alpha:latest", "beta:latest"}));
  { ModelLease lease = manager->acquire(c, std::nullopt); }
  EXPECT_EQ(names(*manager), (std::vector<std::string>{"alpha:latest", "gamma:latest"}));
  EXPECT_EQ(state->loads, 3);
}

TEST_F(ModelManagerTest, EvictsForMaxLoadedModelsToo) {
  state->heap = 100 * GiB;
  ManagerOptions options;
  options.max_loaded = 2;
  auto manager = make(options);
  { ModelLease lease = manager->acquire(a, std::nullopt); }
  std::this_thread::sleep_for(2ms);
  { ModelLease lease = manager->acquire(b, std::nullopt); }
  { ModelLease lease = manager->acquire(c, std::nullopt); }
  EXPECT_EQ(names(*manager), (std::vector<std::string>{"beta:latest", "gamma:latest"}));
}

TEST_F(ModelManagerTest, ALoadWaitsForABusyModelToBecomeIdle) {
  state->heap = 6 * GiB;  // one model at a time
  auto manager = make();
  std::optional<ModelLease> busy(manager->acquire(a, std::nullopt));
  auto next = std::async(std::launch::async, [&] { return manager->acquire(b, std::nullopt); });
  EXPECT_EQ(next.wait_for(30ms), std::future_status::timeout);  // alpha is in use
  busy.reset();
  ModelLease lease = next.get();
  EXPECT_TRUE(lease.loaded_now());
  EXPECT_EQ(names(*manager), std::vector<std::string>{"beta:latest"});
}

TEST_F(ModelManagerTest, RefusesAModelThatCannotFitAndKeepsTheOthers) {
  state->sizes["huge:latest"] = 12 * GiB;
  auto manager = make();
  { ModelLease lease = manager->acquire(a, std::nullopt); }
  try {
    manager->acquire(show_of("huge", 'd'), std::nullopt);
    FAIL() << "a model larger than the device loaded";
  } catch (const http::StatusError& e) {
    EXPECT_EQ(e.status(), 500u);
    EXPECT_STREQ(e.what(),
                 "model requires more memory than the device has: huge:latest needs 12.00 GiB, the "
                 "device has 10.00 GiB");
  }
  EXPECT_EQ(names(*manager), std::vector<std::string>{"alpha:latest"});  // nothing evicted for it
  EXPECT_EQ(state->loads, 1);
}

TEST_F(ModelManagerTest, RefusesWhenOtherProcessesHoldTheSystemMemory) {
  state->host = true;
  state->held_elsewhere = 8 * GiB;  // 2 GiB of 10 left
  auto manager = make();
  try {
    manager->acquire(a, std::nullopt);
    FAIL() << "loaded into memory other processes hold";
  } catch (const http::StatusError& e) {
    EXPECT_EQ(e.status(), 500u);
    EXPECT_STREQ(e.what(),
                 "model requires more system memory (4.00 GiB) than is available "
                 "(2.00 GiB)");
  }
  EXPECT_TRUE(manager->running().empty());
  EXPECT_EQ(state->loads, 0);
  state->held_elsewhere = 0;
  EXPECT_TRUE(manager->acquire(a, std::nullopt).loaded_now());
}

TEST_F(ModelManagerTest, AModelWithADraftModelIsAnInstanceOfItsOwnUnlessSpeculationIsOff) {
  registry::ModelShow drafted = show_of("alpha-drafted", 'a');  // alpha's weights, with a draft
  drafted.draft = registry::Digest::parse("sha256:" + std::string(64, 'e'));
  {
    auto manager = make();
    ModelLease plain = manager->acquire(a, std::nullopt);
    ModelLease with_draft = manager->acquire(drafted, std::nullopt);
    EXPECT_TRUE(with_draft.loaded_now());
    EXPECT_NE(&*plain, &*with_draft);
    EXPECT_EQ(manager->find_loaded(drafted).get(), &*with_draft);
  }
  // With speculation off no draft model loads: the same weights are the same instance.
  ManagerOptions off;
  off.speculation.mode = SpeculationMode::off;
  auto manager = make(off);
  ModelLease plain = manager->acquire(a, std::nullopt);
  ModelLease no_draft = manager->acquire(drafted, std::nullopt);
  EXPECT_FALSE(no_draft.loaded_now());
  EXPECT_EQ(&*plain, &*no_draft);
}

}  // namespace
}  // namespace vkllm::sched
