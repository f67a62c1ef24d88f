#include "engine/kv/block_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/kv/block_table.h"

namespace vkllm::kv {
namespace {

std::vector<int32_t> iota_tokens(int n, int start = 1) {
  std::vector<int32_t> v(n);
  for (int i = 0; i < n; ++i) v[i] = start + i;
  return v;
}

TEST(BlockHash, DependsOnParentAndEveryToken) {
  auto t = iota_tokens(16);
  BlockHash h = hash_block(kRootHash, t);
  EXPECT_EQ(h, hash_block(kRootHash, t));
  EXPECT_NE(h, hash_block(h, t));
  for (size_t i = 0; i < t.size(); ++i) {
    auto u = t;
    ++u[i];
    EXPECT_NE(h, hash_block(kRootHash, u)) << "token " << i;
  }
}

TEST(BlockPool, AllocatesEveryBlockOnceThenRunsOut) {
  BlockPool pool(4);
  std::vector<BlockId> got;
  for (int i = 0; i < 4; ++i) got.push_back(*pool.allocate());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<BlockId>{0, 1, 2, 3}));
  EXPECT_FALSE(pool.allocate().has_value());
  EXPECT_EQ(pool.stats().used, 4u);
  pool.release(got[2]);
  EXPECT_EQ(*pool.allocate(), got[2]);
}

TEST(BlockPool, MultiAllocationIsAllOrNothing) {
  BlockPool pool(3);
  auto a = pool.allocate(2);
  ASSERT_TRUE(a);
  EXPECT_FALSE(pool.allocate(2).has_value());
  EXPECT_EQ(pool.available(), 1u);
}

TEST(BlockPool, ReleasingUnownedBlockThrows) {
  BlockPool pool(2);
  EXPECT_THROW(pool.release(0), std::logic_error);
  BlockId b = *pool.allocate();
  pool.release(b);
  EXPECT_THROW(pool.release(b), std::logic_error);
}

TEST(BlockPool, RegisteredBlocksAreCachedThenEvictedLeastRecentlyUsedFirst) {
  BlockPool pool(3);
  BlockId a = *pool.allocate(), b = *pool.allocate(), c = *pool.allocate();
  pool.register_full(a, 11);
  pool.register_full(b, 22);
  pool.release(a);  // cached first: oldest
  pool.release(b);
  EXPECT_EQ(pool.stats().cached, 2u);
  EXPECT_EQ(pool.available(), 2u);
  // Touching a makes b the least recently used.
  ASSERT_EQ(pool.acquire_cached(11), a);
  pool.release(a);
  EXPECT_EQ(pool.allocate(), b);  // evicts b
  EXPECT_EQ(pool.stats().evictions, 1u);
  EXPECT_FALSE(pool.acquire_cached(22).has_value());
  EXPECT_EQ(pool.acquire_cached(11), a);
  EXPECT_FALSE(pool.allocate().has_value()) << "live blocks must never be evicted";
  (void)c;
}

TEST(BlockPool, DuplicateRegistrationKeepsTheFirstBlock) {
  BlockPool pool(2);
  BlockId a = *pool.allocate(), b = *pool.allocate();
  EXPECT_EQ(pool.register_full(a, 5), a);
  EXPECT_EQ(pool.register_full(b, 5), a);
  EXPECT_FALSE(pool.is_registered(b));
  pool.release(b);
  EXPECT_EQ(pool.stats().free, 1u);
}

TEST(BlockTable, ReservesBlocksAtBoundaries) {
  BlockPool pool(8);
  BlockTable t(pool, 16);
  for (uint32_t n : {15u, 16u, 17u, 31u, 32u, 33u}) {
    BlockTable s(pool, 16);
    ASSERT_TRUE(s.reserve(n));
    EXPECT_EQ(s.blocks().size(), (n + 15) / 16) << n;
  }
  EXPECT_EQ(pool.stats().free, 8u) << "destructors give every block back";
  ASSERT_TRUE(t.reserve(16));
  t.commit(iota_tokens(16));
  ASSERT_TRUE(t.reserve(1));
  EXPECT_EQ(t.blocks().size(), 2u);
  EXPECT_THROW(t.commit(iota_tokens(17)), std::logic_error);
}

TEST(BlockTable, PrefixIsReusedButTheLastPromptTokenIsAlwaysComputed) {
  BlockPool pool(16);
  auto prompt = iota_tokens(40);
  {
    BlockTable first(pool, 16);
    EXPECT_EQ(first.reuse_prefix(prompt), 0u);
    ASSERT_TRUE(first.reserve(40));
    first.commit(prompt);
  }
  EXPECT_EQ(pool.stats().cached, 2u);  // two full blocks; the partial third was freed
  BlockTable second(pool, 16);
  EXPECT_EQ(second.reuse_prefix(prompt), 32u);
  EXPECT_EQ(pool.stats().prefix_hits, 2u);

  // A prompt of exactly two blocks reuses only the first.
  BlockTable third(pool, 16);
  EXPECT_EQ(third.reuse_prefix(std::span(prompt).first(32)), 16u);
  // A prompt that diverges inside the second block reuses only the first.
  auto other = prompt;
  other[20] = 999;
  BlockTable fourth(pool, 16);
  EXPECT_EQ(fourth.reuse_prefix(other), 16u);
  EXPECT_EQ(pool.ref_count(second.blocks()[0]), 3u);
}

TEST(BlockTable, TrimReservedReturnsUnusedBlocks) {
  BlockPool pool(4);
  BlockTable t(pool, 4);
  ASSERT_TRUE(t.reserve(12));
  t.commit(iota_tokens(5));
  t.trim_reserved();
  EXPECT_EQ(t.blocks().size(), 2u);
  EXPECT_EQ(pool.available(), 2u);
}

// Random interleaving of sequences that allocate, commit and finish under memory pressure:
// the blocks of live sequences are never handed to anyone else, and counts always add up.
TEST(BlockTable, RandomWorkloadNeverSharesWritableBlocks) {
  std::random_device rd;
  const unsigned seed = rd();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  BlockPool pool(24);
  std::vector<std::unique_ptr<BlockTable>> live;
  for (int step = 0; step < 2000; ++step) {
    int op = rng() % 3;
    if (op == 0 || live.empty()) {
      auto t = std::make_unique<BlockTable>(pool, 4);
      // Prompts drawn from a small family so that prefixes repeat.
      std::vector<int32_t> prompt(1 + rng() % 20);
      for (size_t i = 0; i < prompt.size(); ++i)
        prompt[i] = (i < 8) ? int32_t(rng() % 2) : int32_t(rng() % 50);
      uint32_t reused = t->reuse_prefix(prompt);
      if (t->reserve(prompt.size() - reused)) {
        t->commit(std::span(prompt).subspan(reused));
        live.push_back(std::move(t));
      }
    } else if (op == 1) {
      auto& t = live[rng() % live.size()];
      if (t->reserve(1)) t->commit(std::vector<int32_t>{int32_t(rng() % 50)});
    } else {
      live.erase(live.begin() + rng() % live.size());
    }
    // Invariants: writable (unregistered) blocks belong to exactly one sequence.
    std::map<BlockId, int> owners;
    for (auto& t : live)
      for (BlockId b : t->blocks()) ++owners[b];
    for (auto [b, n] : owners) {
      EXPECT_EQ(pool.ref_count(b), static_cast<uint32_t>(n));
      if (!pool.is_registered(b)) {
        ASSERT_EQ(n, 1) << "block " << b;
      }
    }
    auto s = pool.stats();
    ASSERT_EQ(s.used, owners.size());
    ASSERT_EQ(s.used + s.cached + s.free, s.total);
  }
}

}  // namespace
}  // namespace vkllm::kv
