#include "engine/cpu/amx_matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/cpu/amx_kernels.h"
#include "engine/gguf/quants.h"

namespace vkllm::cpu::detail {
namespace {

using gguf::TensorType;

// Weight rows per task, at most: the task's packed rows (128 x 1024 columns x 2 or 4 bytes) stay
// in L2 while every token tile passes over them, and each task reads its tokens' activations
// once per chunk, so fewer, larger tasks read less.
constexpr uint64_t kRowsPerTask = 128;
// Columns dequantized and packed at a time (a multiple of every block size): bounds the packed
// weights for the long rows of the FFN's down projection.
constexpr uint64_t kChunkCols = 1024;
constexpr uint32_t kChunkSteps = kChunkCols / kAmxStep;
// The fewest token tiles a group of a split call gets (128 tokens): fewer would repeat the
// weights' dequant for too few tokens.
constexpr uint32_t kMinGroupTiles = 8;
// K steps per block call: a row pair's weights for them (32 rows x 512 columns, 32 KiB in bf16;
// half as many steps where the weights have a lo half too) stay in L1.
constexpr uint32_t kSliceSteps = 16;

AmxPrecision precision_for(TensorType type) {
  switch (type) {
    case TensorType::F32:
    case TensorType::F16:
      return AmxPrecision::SplitBoth;
    case TensorType::BF16:
      return AmxPrecision::SplitX;
    default:
      return AmxPrecision::Single;
  }
}

// The types amx_dequantize has an AVX-512 kernel for.
bool fast_dequant(TensorType type) {
  switch (type) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q8_0:
    case TensorType::Q4_0:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
      return true;
    default:
      return false;
  }
}

// Carves 64-byte-aligned arrays out of one per-thread float buffer.
class Carver {
 public:
  explicit Carver(std::vector<float>& buf) : buf_(buf) {}
  void add(uint64_t bytes) { total_ += (bytes + 63) / 64 * 64; }
  void allocate() {
    const uint64_t floats = (total_ + 64) / sizeof(float);
    if (buf_.size() < floats) buf_.resize(floats);
    const auto p = reinterpret_cast<uintptr_t>(buf_.data());
    next_ = reinterpret_cast<std::byte*>((p + 63) / 64 * 64);
  }
  template <class T>
  T* take(uint64_t count) {
    T* p = reinterpret_cast<T*>(next_);
    next_ += (count * sizeof(T) + 63) / 64 * 64;
    return p;
  }

 private:
  std::vector<float>& buf_;
  uint64_t total_ = 0;
  std::byte* next_ = nullptr;
};

}  // namespace

uint32_t amx_min_tokens(std::span<const Product> products) {
  uint32_t min = 16;
  for (const Product& p : products) {
    if (!fast_dequant(p.w->type)) return 192;
    if (precision_for(p.w->type) != AmxPrecision::Single) min = 32;
  }
  return min;
}

void amx_matmul(std::span<const Product> products, const float* x, uint64_t x_stride, uint32_t n,
                ThreadPool& pool, MatmulWorkspace& ws) {
  const uint64_t cols = products[0].w->cols;
  const uint32_t steps = static_cast<uint32_t>((cols + kAmxStep - 1) / kAmxStep);
  const uint32_t chunk_steps = std::min(steps, kChunkSteps);
  const uint32_t tok_tiles = (n + kAmxTile - 1) / kAmxTile;
  bool need_x_lo = false, need_w_lo = false;
  uint64_t total_rows = 0;
  for (const Product& p : products) {
    const AmxPrecision prec = precision_for(p.w->type);
    need_x_lo |= prec != AmxPrecision::Single;
    need_w_lo |= prec == AmxPrecision::SplitBoth;
    total_rows += p.w->rows;
  }

  // The activations, converted once per call for every task.
  const uint64_t panel = uint64_t{steps} * kAmxTileElems;  // one token tile, all columns
  const uint64_t x_elems = tok_tiles * panel;
  std::vector<std::byte>& xbuf = ws.buffer(0);
  const uint64_t x_bytes = x_elems * sizeof(uint16_t) * (need_x_lo ? 2 : 1) + 64;
  if (xbuf.size() < x_bytes) xbuf.resize(x_bytes);
  const auto xaddr = reinterpret_cast<uintptr_t>(xbuf.data());
  uint16_t* x_hi = reinterpret_cast<uint16_t*>((xaddr + 63) / 64 * 64);
  uint16_t* x_lo = need_x_lo ? x_hi + x_elems : nullptr;
  pool.parallel_for(tok_tiles, [&](uint32_t j, unsigned) {
    const uint32_t t0 = j * kAmxTile;
    amx_pack_x(x + t0 * x_stride, x_stride, std::min(kAmxTile, n - t0), cols, steps,
               x_hi + j * panel, x_lo ? x_lo + j * panel : nullptr);
  });

  // Tasks are (product, block of rows, group of token tiles). Each task dequantizes its rows and
  // reads its tokens' activations once per chunk: while there are fewer than four tasks per
  // thread, halve the rows to 64, then the token groups down to 128 tokens (so the dequant stays
  // amortized over many tokens), then the rows to 32.
  uint64_t rows_per_task = kRowsPerTask;
  uint32_t groups = 1;
  auto count_tasks = [&] {
    uint64_t t = 0;
    for (const Product& p : products) t += (p.w->rows + rows_per_task - 1) / rows_per_task;
    return t * groups;
  };
  while (count_tasks() < 4 * uint64_t{pool.size()}) {
    if (rows_per_task > 4 * kAmxTile) {
      rows_per_task /= 2;
    } else if (tok_tiles / (2 * groups) >= kMinGroupTiles) {
      groups *= 2;
    } else if (rows_per_task > 2 * kAmxTile) {
      rows_per_task /= 2;
    } else {
      break;
    }
  }
  // Token tiles per group, even so that groups split no tile pair.
  const uint32_t group_tiles = ((tok_tiles + groups - 1) / groups + 1) & ~1u;
  std::vector<uint32_t> first_task(products.size());
  uint32_t n_tasks = 0;
  for (size_t i = 0; i < products.size(); ++i) {
    first_task[i] = n_tasks;
    n_tasks +=
        static_cast<uint32_t>((products[i].w->rows + rows_per_task - 1) / rows_per_task) * groups;
  }
  ws.reserve_threads(pool.size());
  const uint64_t chunk_cols = uint64_t{chunk_steps} * kAmxStep;
  const uint64_t w_elems = rows_per_task * chunk_cols;
  // The task's results [token][row]; the padding keeps a tile's 16 rows out of one cache set.
  const uint64_t acc_stride = rows_per_task + kAmxTile;

  pool.parallel_for(n_tasks, [&](uint32_t task, unsigned thread) {
    size_t pi = products.size() - 1;
    while (first_task[pi] > task) --pi;
    const Product& prod = products[pi];
    const WeightView& w = *prod.w;
    const AmxPrecision prec = precision_for(w.type);
    const gguf::TypeTraits& tr = gguf::traits(w.type);
    const uint64_t row_bytes = gguf::row_bytes(w.type, cols);
    const uint32_t in_product = task - first_task[pi];
    const uint64_t r0 = uint64_t{in_product / groups} * rows_per_task;
    const uint32_t j0 = in_product % groups * group_tiles;
    const uint32_t j1 = std::min(tok_tiles, j0 + group_tiles);
    if (j0 >= j1) return;
    const uint64_t nr = std::min(w.rows, r0 + rows_per_task) - r0;
    const uint32_t row_tiles = static_cast<uint32_t>((nr + 2 * kAmxTile - 1) / (2 * kAmxTile) * 2);

    Carver carve(ws.scratch(thread));
    carve.add(kAmxTile * chunk_cols * sizeof(float));
    carve.add(w_elems * sizeof(uint16_t));
    if (need_w_lo) carve.add(w_elems * sizeof(uint16_t));
    carve.add(uint64_t{group_tiles} * kAmxTile * acc_stride * sizeof(float));
    carve.allocate();
    float* rows_f32 = carve.take<float>(kAmxTile * chunk_cols);
    uint16_t* w_hi = carve.take<uint16_t>(w_elems);
    uint16_t* w_lo = need_w_lo ? carve.take<uint16_t>(w_elems) : nullptr;
    float* acc = carve.take<float>(uint64_t{group_tiles} * kAmxTile * acc_stride);
    const bool with_w_lo = prec == AmxPrecision::SplitBoth;

    amx_begin();
    for (uint32_t s0 = 0; s0 < steps; s0 += chunk_steps) {
      const uint32_t cs = std::min(chunk_steps, steps - s0);
      const uint64_t c0 = uint64_t{s0} * kAmxStep;
      const uint64_t valid = std::min<uint64_t>(uint64_t{cs} * kAmxStep, cols - c0);
      const uint64_t w_panel = uint64_t{cs} * kAmxTileElems;  // one row tile, this chunk
      for (uint32_t i = 0; i < row_tiles; ++i) {
        const uint64_t first = uint64_t{i} * kAmxTile;
        const uint32_t here =
            first < nr ? static_cast<uint32_t>(std::min<uint64_t>(kAmxTile, nr - first)) : 0;
        for (uint32_t rr = 0; rr < here; ++rr) {
          float* dst = rows_f32 + rr * chunk_cols;
          const std::byte* src =
              w.data + (r0 + first + rr) * row_bytes + c0 / tr.block_elements * tr.block_bytes;
          if (!amx_dequantize(w.type, src, dst, valid)) gguf::dequantize(w.type, src, dst, valid);
          std::fill(dst + valid, dst + uint64_t{cs} * kAmxStep, 0.0f);
        }
        amx_pack_w(rows_f32, chunk_cols, here, cs, w_hi + i * w_panel,
                   with_w_lo ? w_lo + i * w_panel : nullptr);
      }
      // K in slices whose weights for one row pair stay in L1 while all the token tiles stream
      // past from L2; each result tile is loaded and stored once per slice.
      const uint32_t slice_steps = with_w_lo ? kSliceSteps / 2 : kSliceSteps;
      for (uint32_t ss = 0; ss < cs; ss += slice_steps) {
        const uint32_t slice = std::min(slice_steps, cs - ss);
        for (uint32_t i = 0; i < row_tiles; i += 2) {
          const uint64_t wo0 = i * w_panel + uint64_t{ss} * kAmxTileElems;
          const uint64_t wo1 = wo0 + w_panel;
          for (uint32_t j = j0; j < j1; j += 2) {
            const bool two = j + 1 < j1;
            const uint64_t xo0 = j * panel + uint64_t{s0 + ss} * kAmxTileElems;
            const uint64_t xo1 = two ? xo0 + panel : xo0;
            AmxBlock b{};
            b.x_hi[0] = x_hi + xo0;
            b.x_hi[1] = x_hi + xo1;
            if (x_lo) {
              b.x_lo[0] = x_lo + xo0;
              b.x_lo[1] = x_lo + xo1;
            }
            b.w_hi[0] = w_hi + wo0;
            b.w_hi[1] = w_hi + wo1;
            if (with_w_lo) {
              b.w_lo[0] = w_lo + wo0;
              b.w_lo[1] = w_lo + wo1;
            }
            b.c = acc + uint64_t{j - j0} * kAmxTile * acc_stride + uint64_t{i} * kAmxTile;
            b.c_stride = acc_stride;
            b.steps = slice;
            b.two_tokens = two;
            b.zero = s0 + ss == 0;
            amx_block(b, prec);
          }
        }
      }
    }
    amx_end();

    for (uint32_t t = j0 * kAmxTile; t < std::min(n, j1 * kAmxTile); ++t) {
      float* yt = prod.y + t * prod.y_stride + r0;
      const float* at = acc + (t - j0 * kAmxTile) * acc_stride;
      if (prod.accumulate) {
        for (uint64_t r = 0; r < nr; ++r) yt[r] += at[r];
      } else {
        std::copy(at, at + nr, yt);
      }
    }
  });
}

}  // namespace vkllm::cpu::detail
