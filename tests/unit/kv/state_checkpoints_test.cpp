// Recurrent-state checkpoints (engine/kv/state_checkpoints.h) and how block tables use them: a
// hybrid's table reuses a cached prefix only up to its deepest block with a checkpoint, pins that
// checkpoint until it is restored, and saves new ones only at block boundaries; a checkpoint
// leaves with the cached block it ends at, a full pool replaces its least recently used one that
// nobody is about to restore, and a rolling checkpoint replaces the table's previous one.
#include <gtest/gtest.h>

#include <numeric>
#include <optional>
#include <vector>

#include "engine/kv/block_pool.h"
#include "engine/kv/block_table.h"
#include "engine/kv/state_checkpoints.h"

namespace vkllm::kv {
namespace {

constexpr uint32_t kBlock = 4;

std::vector<int32_t> tokens_from(int32_t first, size_t n) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Computes `n` more of `tokens` in `t` as a runner step would (the state advancing with them),
// then keeps a checkpoint if asked and possible; the checkpoint slot taken, if any.
std::optional<uint32_t> compute(BlockTable& t, const std::vector<int32_t>& tokens, uint32_t n,
                                Checkpoint cp = Checkpoint::none) {
  EXPECT_TRUE(t.reserve(n));
  if (t.pending_restore()) t.restored();
  if (t.state_slot()) {
    EXPECT_TRUE(t.state_current());
  }
  t.commit(std::span<const int32_t>(tokens).subspan(t.num_tokens(), n));
  if (cp == Checkpoint::none) return std::nullopt;
  auto slot = t.begin_checkpoint();
  if (slot) t.end_checkpoint(*slot, cp == Checkpoint::rolling);
  return slot;
}

TEST(StateCheckpoints, AttachFindAndAFullPoolReplacesTheLeastRecentlyUsedUnpinned) {
  StateCheckpoints cps(2);
  const auto a = cps.acquire(), b = cps.acquire();
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(cps.attach(*a, 11));
  EXPECT_TRUE(cps.attach(*b, 22));
  EXPECT_EQ(cps.find(11), a);
  EXPECT_EQ(cps.find(22), b);
  // Full: 11 is the least recently used, but pinned by a table about to restore it.
  cps.pin(*a);
  const auto c = cps.acquire();
  ASSERT_EQ(c, b);
  EXPECT_FALSE(cps.find(22));
  EXPECT_FALSE(cps.acquire()) << "one slot pinned, the other taken";
  // A second checkpoint of the same prefix is not kept twice.
  EXPECT_FALSE(cps.attach(*c, 11));
  cps.unpin(*a);
  EXPECT_EQ(cps.acquire(), c) << "the discarded slot is free again";
  cps.discard(*c);
  EXPECT_EQ(cps.stats().held, 1u);
  EXPECT_EQ(cps.stats().replaced, 1u);
  EXPECT_THROW(cps.unpin(*a), std::logic_error);
}

TEST(StateCheckpoints, ATableResumesFromItsDeepestCheckpointedBlock) {
  BlockPool pool(32, /*state_slots=*/2, /*checkpoints=*/4);
  const auto prompt = tokens_from(10, 23);  // 5 full blocks and 3 tokens
  {
    BlockTable first(pool, kBlock);
    EXPECT_EQ(first.reuse_prefix(prompt), 0u);
    EXPECT_FALSE(compute(first, prompt, 6, Checkpoint::keep)) << "not at a block boundary";
    EXPECT_TRUE(compute(first, prompt, 2, Checkpoint::keep));  // after block 2
    compute(first, prompt, 12);                                // blocks 3-5: none
    EXPECT_FALSE(compute(first, prompt, 3, Checkpoint::keep)) << "23 tokens end inside a block";
  }
  EXPECT_EQ(pool.checkpoints().stats().held, 1u);
  // Every full block is cached, but the state exists only after block 2.
  BlockTable again(pool, kBlock);
  EXPECT_EQ(again.reuse_prefix(prompt), 8u);
  EXPECT_EQ(again.blocks().size(), 2u);
  ASSERT_TRUE(again.pending_restore());
  EXPECT_FALSE(again.state_current());
  EXPECT_EQ(pool.checkpoints().stats().restored, 1u);
  // The restore's checkpoint cannot be replaced while pinned: the pool's other 3 slots can.
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(pool.checkpoints().acquire());
  EXPECT_FALSE(pool.checkpoints().acquire());
  ASSERT_TRUE(again.reserve(1));
  again.restored();
  EXPECT_TRUE(again.state_current());
  EXPECT_EQ(again.state_tokens(), 8u);
  EXPECT_TRUE(pool.checkpoints().acquire()) << "unpinned once restored";

  // Without checkpoint slots a hybrid's table reuses nothing; a transformer's all it can.
  BlockPool none(32, 2, 0), plain(32);
  for (BlockPool* p : {&none, &plain}) {
    BlockTable t(*p, kBlock);
    compute(t, prompt, 23);
  }
  BlockTable hybrid(none, kBlock), transformer(plain, kBlock);
  EXPECT_EQ(hybrid.reuse_prefix(prompt), 0u);
  EXPECT_EQ(transformer.reuse_prefix(prompt), 20u);
}

TEST(StateCheckpoints, ACheckpointLeavesWithItsEvictedBlockAndRollingOnesReplaceTheLast) {
  BlockPool pool(4, 1, 4);
  const auto a = tokens_from(10, 16);
  {
    BlockTable t(pool, kBlock);
    compute(t, a, 4, Checkpoint::rolling);
    compute(t, a, 4, Checkpoint::rolling);  // replaces the one after block 0
    EXPECT_EQ(pool.checkpoints().stats().held, 1u);
    compute(t, a, 4, Checkpoint::keep);
    EXPECT_EQ(pool.checkpoints().stats().held, 2u);
  }
  // A new sequence needing every block evicts the cached ones, and their checkpoints with them.
  BlockTable b(pool, kBlock);
  const auto other = tokens_from(100, 16);
  EXPECT_EQ(b.reuse_prefix(other), 0u);
  ASSERT_TRUE(b.reserve(16));
  EXPECT_EQ(pool.checkpoints().stats().held, 0u);
  EXPECT_EQ(pool.checkpoints().stats().dropped, 2u);
  BlockTable c(pool, kBlock);
  EXPECT_EQ(c.reuse_prefix(a), 0u);
}

}  // namespace
}  // namespace vkllm::kv
