// Recurrent-state slots (engine/kv/state_slots.h) and their lifetime in a BlockTable: a table
// takes a slot at its first reserve() and no other, gives it back when it is destroyed (a
// moved-from table gives back nothing), a reservation that fails takes none, and with every slot
// taken a reservation fails like a full cache.
#include <gtest/gtest.h>

#include <optional>
#include <utility>
#include <vector>

#include "engine/kv/block_pool.h"
#include "engine/kv/block_table.h"
#include "engine/kv/state_layout.h"

namespace vkllm::kv {
namespace {

TEST(StateSlots, TablesTakeOneSlotEachAndGiveItBack) {
  BlockPool pool(8, 2);
  std::optional<BlockTable> a, b, c;
  a.emplace(pool, 4);
  EXPECT_FALSE(a->state_slot());
  ASSERT_TRUE(a->reserve(5));
  ASSERT_TRUE(a->state_slot());
  const uint32_t slot_a = *a->state_slot();
  EXPECT_TRUE(a->state_current());
  std::vector<int32_t> tokens(5, 1);
  a->commit(tokens);
  ASSERT_TRUE(a->reserve(3));  // keeps its slot
  EXPECT_EQ(*a->state_slot(), slot_a);
  EXPECT_EQ(pool.state_slots().available(), 1u);

  b.emplace(pool, 4);
  ASSERT_TRUE(b->reserve(1));
  EXPECT_NE(*b->state_slot(), slot_a);
  c.emplace(pool, 4);
  EXPECT_FALSE(c->reserve(1)) << "every slot is taken";
  EXPECT_FALSE(c->state_slot());
  EXPECT_EQ(pool.available(), 8u - 2u - 1u) << "the failed reservation took no block";

  BlockTable moved(std::move(*b));
  b.reset();  // a moved-from table gives nothing back
  EXPECT_EQ(pool.state_slots().available(), 0u);
  a.reset();
  EXPECT_EQ(pool.state_slots().available(), 1u);
  ASSERT_TRUE(c->reserve(1));
  EXPECT_EQ(*c->state_slot(), slot_a);  // the freed slot
}

TEST(StateSlots, NoSlotWhenBlocksRunOutAndNoneWithoutRecurrentLayers) {
  BlockPool pool(2, 1);
  BlockTable t(pool, 4);
  EXPECT_FALSE(t.reserve(9)) << "three blocks of a pool of two";
  EXPECT_FALSE(t.state_slot());
  EXPECT_EQ(pool.state_slots().available(), 1u);

  BlockPool plain(2);
  BlockTable p(plain, 4);
  ASSERT_TRUE(p.reserve(4));
  EXPECT_FALSE(p.state_slot());
}

TEST(StateLayout, LayersConcatenatePerSlot) {
  const uint64_t floats[] = {0, 6, 0, 4};
  const StateLayout s = StateLayout::make(floats, 3);
  EXPECT_FALSE(s.has(0));
  EXPECT_TRUE(s.has(1));
  EXPECT_EQ(s.layer_offset[1], 0u);
  EXPECT_EQ(s.layer_offset[3], 6u);
  EXPECT_EQ(s.slot_floats, 10u);
  EXPECT_EQ(s.bytes(), 3u * 10u * 4u);
  const uint64_t none[] = {0, 0};
  EXPECT_TRUE(StateLayout::make(none, 3).empty());
}

}  // namespace
}  // namespace vkllm::kv
