// GPU time of the weight-product kernels (engine/vulkan/matmul_ops.h) per weight type, measured
// with timestamps around a chain of dispatches (a barrier after each, as in a forward pass).
// Several copies of the weights rotate so that the L2 cache does not serve them.
//
// Counters: weight_GBps = weight bytes streamed per second (decode is bound by it);
// TFLOPs = 2 * rows * cols * batch per second (prefill).
// mmvq/...: the int8-dot matvec on activations quantized beforehand (once, untimed: one
// quantization serves several products); quantize_q8/...: that quantization alone.
// VKLLM_BENCH_FILTER-style selection is Google Benchmark's own --benchmark_filter.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include "engine/gguf/tensor_type.h"
#include "engine/vulkan/context.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/weight_layout.h"

namespace {

using vkllm::gguf::TensorType;
namespace vk = vkllm::vk;

vk::Context& context() {
  static vk::Context ctx;
  return ctx;
}

struct Problem {
  TensorType type;
  uint32_t rows, cols, batch;
  bool matmul;
  vk::MatmulTuning tuning;
  bool q8 = false;             // int8-dot matvec on q8 activations
  bool quantize_only = false;  // time record_quantize_q8 of the activations alone
};

void run(benchmark::State& state, const Problem& p) {
  vk::Context& ctx = context();
  vk::Device& dev = ctx.device();
  const uint64_t w_bytes = vk::weight_tensor_bytes(p.type, p.rows, p.cols);
  const uint64_t slot =
      (vk::device_weight_bytes(p.type, w_bytes) + vk::kWeightReadSlackBytes + 255) / 256 * 256;
  const uint32_t copies = static_cast<uint32_t>(std::clamp<uint64_t>((256ull << 20) / slot, 2, 16));
  vk::Buffer weights(dev, slot * copies, vk::MemoryKind::DeviceLocal, "bench weights");
  vk::Buffer x(dev, uint64_t{p.batch} * p.cols * 4, vk::MemoryKind::DeviceLocal, "bench x");
  vk::Buffer y(dev, uint64_t{p.batch} * p.rows * 4, vk::MemoryKind::DeviceLocal, "bench y");
  vk::CommandRecorder rec(dev);
  rec.begin();
  // A repeated finite pattern: the kernels' speed does not depend on the values.
  rec.fill(weights.slice(), 0x3A5B3C1Du);
  rec.fill(x.slice(), 0x3C003C00u);
  rec.submit_and_wait();

  vk::MatmulTuning tuning = p.tuning;
  if (p.q8 || p.quantize_only) tuning.int8_dot = vk::Int8Dot::On;
  vk::MatmulKernels kernels(ctx.pipelines(), tuning);
  if (p.q8 && !kernels.int8_dot(p.type)) {
    state.SkipWithError("no int8-dot kernel on this device");
    return;
  }
  vk::Buffer xq(dev, vk::q8_activation_bytes(p.cols, p.batch), vk::MemoryKind::DeviceLocal,
                "bench xq");
  if (p.q8) {
    rec.begin();
    kernels.record_quantize_q8(rec, x.slice(), p.cols, p.batch, 0, xq.slice());
    rec.submit_and_wait();
  }
  const uint32_t reps = std::max<uint32_t>(copies, p.matmul ? 8 : 32);
  auto record_all = [&] {
    rec.begin();
    rec.timestamp("start");
    for (uint32_t r = 0; r < reps; ++r) {
      const vk::MatmulArgs args{.type = p.type,
                                .weights = weights.slice((r % copies) * slot, slot),
                                .x = x.slice(),
                                .y = y.slice(),
                                .rows = p.rows,
                                .cols = p.cols,
                                .batch = p.batch,
                                .xq = p.q8 ? xq.slice() : vk::BufferSlice{}};
      if (p.quantize_only)
        kernels.record_quantize_q8(rec, x.slice(), p.cols, p.batch, 0, xq.slice());
      else if (p.matmul)
        kernels.record_matmul(rec, args);
      else
        kernels.record_matvec(rec, args);
      rec.barrier();
    }
    rec.timestamp("end");
    rec.submit_and_wait();
  };
  record_all();  // compiles the pipeline and warms up
  double seconds = 0;
  for (auto _ : state) {
    record_all();
    const auto t = rec.timings();
    if (t.size() < 2) {
      state.SkipWithError("device has no timestamps");
      return;
    }
    // One iteration is the whole chain, so the minimum time is reached in few submissions
    // (timing each call alone needed thousands of them: seconds of host time per benchmark).
    const double s = (t.back().ms - t.front().ms) * 1e-3;
    state.SetIterationTime(s);
    seconds += s;
  }
  const double per_call = seconds / static_cast<double>(state.iterations()) / reps;
  state.counters["us"] = per_call * 1e6;
  state.counters["weight_GBps"] = static_cast<double>(w_bytes) / per_call * 1e-9;
  state.counters["TFLOPs"] = 2.0 * p.rows * p.cols * p.batch / per_call * 1e-12;
}

void add(const std::string& name, const Problem& p) {
  benchmark::RegisterBenchmark(name.c_str(), [p](benchmark::State& s) { run(s, p); })
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(0.02);
}

std::string type_tag(TensorType t) {
  return std::string(vkllm::gguf::type_name(t));
}

int register_all() {
  const TensorType all[] = {
      TensorType::F32,    TensorType::F16,  TensorType::BF16,   TensorType::Q4_0,
      TensorType::Q4_1,   TensorType::Q5_0, TensorType::Q5_1,   TensorType::Q8_0,
      TensorType::IQ4_NL, TensorType::Q2_K, TensorType::Q3_K,   TensorType::Q4_K,
      TensorType::Q5_K,   TensorType::Q6_K, TensorType::IQ4_XS, TensorType::MXFP4};
  // Llama-3-8B shapes: ffn gate/up (14336 x 4096) and a square projection (4096 x 4096).
  for (TensorType t : all) {
    for (uint32_t batch : {1u, 8u})
      add("matvec/" + type_tag(t) + "/14336x4096/b" + std::to_string(batch),
          {t, 14336, 4096, batch, false, {}});
    add("matvec/" + type_tag(t) + "/4096x4096/b1", {t, 4096, 4096, 1, false, {}});
    add("matmul/" + type_tag(t) + "/4096x4096/m512", {t, 4096, 4096, 512, true, {}});
  }
  // The int8-dot decode kernels against the float ones on the same shapes, down_proj included.
  for (TensorType t :
       {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0, TensorType::Q4_0, TensorType::Q5_K}) {
    for (uint32_t batch : {1u, 8u})
      add("mmvq/" + type_tag(t) + "/14336x4096/b" + std::to_string(batch),
          {t, 14336, 4096, batch, false, {}, true});
    add("mmvq/" + type_tag(t) + "/4096x4096/b1", {t, 4096, 4096, 1, false, {}, true});
    add("mmvq/" + type_tag(t) + "/4096x14336/b1", {t, 4096, 14336, 1, false, {}, true});
    add("matvec/" + type_tag(t) + "/4096x14336/b1", {t, 4096, 14336, 1, false, {}});
  }
  for (uint32_t batch : {1u, 8u})
    add("quantize_q8/14336/b" + std::to_string(batch),
        {TensorType::Q4_K, 256, 14336, batch, false, {}, false, true});
  struct Shape {
    uint32_t rows, cols;
  };
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0})
    for (Shape sh :
         {Shape{14336, 4096}, Shape{4096, 14336}, Shape{4096, 4096}, Shape{2048, 8192},
          Shape{16384, 2048}, Shape{3072, 2048}, Shape{128256, 2048}, Shape{128256, 4096}})
      for (uint32_t batch : {1u, 8u})
        for (uint32_t threads : {32u, 64u, 128u, 256u})
          for (uint32_t rows : {1u, 2u, 4u, 8u, 16u})
            if (batch == 1 || rows <= 4)
              add("sweep_mmvq/" + type_tag(t) + "/" + std::to_string(sh.rows) + "x" +
                      std::to_string(sh.cols) + "/b" + std::to_string(batch) + "/t" +
                      std::to_string(threads) + "_r" + std::to_string(rows),
                  {t,
                   sh.rows,
                   sh.cols,
                   batch,
                   false,
                   {.q8_threads = threads, .q8_rows = rows},
                   true});
  // The float-activation matvec on a Llama-3.2-1B F16 model's shapes (gate|up, down, LM head):
  // threads x rows per workgroup, at one and eight vectors.
  for (Shape sh : {Shape{16384, 2048}, Shape{2048, 8192}, Shape{128256, 2048}, Shape{3072, 2048},
                   Shape{2048, 2048}})
    for (uint32_t batch : {1u, 8u}) {
      add("sweep_matvec_f16/" + std::to_string(sh.rows) + "x" + std::to_string(sh.cols) + "/b" +
              std::to_string(batch) + "/default",
          {TensorType::F16, sh.rows, sh.cols, batch, false, {}});
      for (uint32_t threads : {32u, 64u, 128u, 256u})
        for (uint32_t rows : {1u, 2u, 4u, 8u})
          add("sweep_matvec_f16/" + std::to_string(sh.rows) + "x" + std::to_string(sh.cols) + "/b" +
                  std::to_string(batch) + "/t" + std::to_string(threads) + "_r" +
                  std::to_string(rows),
              {TensorType::F16,
               sh.rows,
               sh.cols,
               batch,
               false,
               {.matvec_threads = threads, .matvec_rows = rows}});
    }
  // The tensor-core GEMM (default where the device has it; "matmul/" above) against the portable
  // one, at prefill and at batched-decode token counts, and its tile shapes.
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0, TensorType::F16}) {
    for (uint32_t m : {16u, 32u, 64u, 512u}) {
      add("matmul/" + type_tag(t) + "/14336x4096/m" + std::to_string(m),
          {t, 14336, 4096, m, true, {}});
      add("matmul_portable/" + type_tag(t) + "/14336x4096/m" + std::to_string(m),
          {t, 14336, 4096, m, true, {.coopmat = vk::CoopMat::Off}});
    }
    for (uint32_t m : {16u, 32u, 64u}) {
      add("matvec/" + type_tag(t) + "/14336x4096/b" + std::to_string(m),
          {t, 14336, 4096, m, false, {}});
      if (t != TensorType::F16)
        add("mmvq/" + type_tag(t) + "/14336x4096/b" + std::to_string(m),
            {t, 14336, 4096, m, false, {}, true});
    }
  }
  struct CmTile {
    uint32_t wm, wn, fm, fn;
  };
  for (TensorType t : {TensorType::Q4_K, TensorType::F16})
    for (CmTile c : {CmTile{2, 4, 4, 2}, CmTile{2, 2, 4, 4}, CmTile{4, 2, 2, 4}, CmTile{2, 4, 2, 2},
                     CmTile{2, 2, 2, 2}, CmTile{1, 4, 4, 2}, CmTile{4, 2, 2, 2}})
      add("sweep_coopmat/" + type_tag(t) + "/14336x4096/m512/w" + std::to_string(c.wm) + "x" +
              std::to_string(c.wn) + "_f" + std::to_string(c.fm) + "x" + std::to_string(c.fn),
          {t,
           14336,
           4096,
           512,
           true,
           {.cm_warps_m = c.wm, .cm_warps_n = c.wn, .cm_frags_m = c.fm, .cm_frags_n = c.fn}});
  struct Shape2 {
    uint32_t rows, cols;
  };
  // Tensor-core kernel variants on an 8B layer's shapes at prefill and batched-decode token
  // counts (split by the default rule): loads item by item or batched per slice, activations
  // converted in the tile or once per product.
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K, TensorType::F16, TensorType::Q8_0})
    for (Shape2 sh : {Shape2{14336, 4096}, Shape2{4096, 4096}, Shape2{4096, 14336}})
      for (uint32_t m : {64u, 512u})
        for (int32_t loads : {0, 1, 2})
          for (int32_t xf : {0, 1})
            add("sweep_cmvar/" + type_tag(t) + "/" + std::to_string(sh.rows) + "x" +
                    std::to_string(sh.cols) + "/m" + std::to_string(m) + "/loads" +
                    std::to_string(loads) + "_xf" + std::to_string(xf),
                {t, sh.rows, sh.cols, m, true, {.cm_batched_loads = loads, .cm_x_f16 = xf}});
  // Tensor-core split-K at batched-decode token counts (and prefill) against the int8-dot matvec
  // on the shapes of an 8B layer: s0 = no split, sN = aim at N workgroups per compute unit.
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K})
    for (Shape2 sh : {Shape2{14336, 4096}, Shape2{4096, 4096}, Shape2{4096, 14336}}) {
      if (t == TensorType::Q6_K && sh.cols == sh.rows) continue;  // Q4_K_M: Q6_K in ffn_down
      const std::string dims = std::to_string(sh.rows) + "x" + std::to_string(sh.cols);
      for (uint32_t m : {16u, 32u, 64u, 512u})
        for (int32_t per_cu : {0, 2, 4, 8})
          if (m < 512 || per_cu % 4 == 0)
            add("sweep_splitk/" + type_tag(t) + "/" + dims + "/m" + std::to_string(m) + "/s" +
                    std::to_string(per_cu),
                {t, sh.rows, sh.cols, m, true, {.cm_split_per_cu = per_cu}});
      for (uint32_t m : {16u, 32u, 64u})
        add("sweep_splitk/" + type_tag(t) + "/" + dims + "/m" + std::to_string(m) + "/mmvq",
            {t, sh.rows, sh.cols, m, false, {}, true});
    }
  // The same on a 1B layer's shapes (2048 wide, ffn 8192), with splits of at least 4 or 8 slices.
  for (Shape2 sh : {Shape2{2048, 2048}, Shape2{8192, 2048}, Shape2{2048, 8192}}) {
    const std::string dims = std::to_string(sh.rows) + "x" + std::to_string(sh.cols);
    for (uint32_t m : {16u, 64u}) {
      for (int32_t per_cu : {0, 4, 8})
        for (uint32_t min_slices : {4u, 8u})
          if (per_cu || min_slices == 8)
            add("sweep_splitk/q4_K/" + dims + "/m" + std::to_string(m) + "/s" +
                    std::to_string(per_cu) + "_min" + std::to_string(min_slices),
                {TensorType::Q4_K,
                 sh.rows,
                 sh.cols,
                 m,
                 true,
                 {.cm_split_per_cu = per_cu, .cm_split_min_slices = min_slices}});
      add("sweep_splitk/q4_K/" + dims + "/m" + std::to_string(m) + "/mmvq",
          {TensorType::Q4_K, sh.rows, sh.cols, m, false, {}, true});
    }
  }
  // Smaller tensor-core tiles at batched-decode token counts, split by the default rule.
  for (uint32_t m : {16u, 32u, 64u})
    for (CmTile c : {CmTile{1, 4, 0, 2}, CmTile{1, 4, 0, 1}, CmTile{1, 2, 0, 2}, CmTile{1, 8, 0, 1},
                     CmTile{1, 8, 0, 2}})
      for (Shape2 sh : {Shape2{14336, 4096}, Shape2{4096, 4096}})
        add("sweep_cmtile/q4_K/" + std::to_string(sh.rows) + "x" + std::to_string(sh.cols) + "/m" +
                std::to_string(m) + "/w" + std::to_string(c.wm) + "x" + std::to_string(c.wn) +
                "_fn" + std::to_string(c.fn),
            {TensorType::Q4_K,
             sh.rows,
             sh.cols,
             m,
             true,
             {.cm_warps_m = c.wm, .cm_warps_n = c.wn, .cm_frags_m = c.fm, .cm_frags_n = c.fn}});
  // Tuning sweeps on the types of a Q4_K_M model.
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K, TensorType::F16}) {
    for (uint32_t threads : {32u, 64u, 128u, 256u})
      for (uint32_t rows : {1u, 2u, 4u})
        add("sweep_matvec/" + type_tag(t) + "/14336x4096/t" + std::to_string(threads) + "_r" +
                std::to_string(rows),
            {t, 14336, 4096, 1, false, {.matvec_threads = threads, .matvec_rows = rows}});
    struct Tile {
      uint32_t bm, bn, tm, tn;
    };
    for (Tile tile : {Tile{64, 64, 4, 4}, Tile{64, 128, 4, 8}, Tile{128, 128, 8, 8},
                      Tile{128, 64, 8, 4}, Tile{32, 128, 4, 8}})
      add("sweep_matmul/" + type_tag(t) + "/4096x4096/m512/" + std::to_string(tile.bm) + "x" +
              std::to_string(tile.bn) + "_" + std::to_string(tile.tm) + "x" +
              std::to_string(tile.tn),
          {t,
           4096,
           4096,
           512,
           true,
           {.tile_tokens = tile.bm,
            .tile_rows = tile.bn,
            .thread_tokens = tile.tm,
            .thread_rows = tile.tn}});
  }
  // Llama-3-8B F16 decode shapes (Q|K|V, output, gate|up, down, LM head): the float matvec with
  // 8-byte and 16-byte weight loads, threads x rows per workgroup, at one and eight vectors.
  for (Shape2 sh : {Shape2{6144, 4096}, Shape2{4096, 4096}, Shape2{28672, 4096},
                    Shape2{4096, 14336}, Shape2{128256, 4096}})
    for (uint32_t batch : {1u, 8u})
      for (int32_t wide : {0, 1}) {
        const std::string name = "sweep_f16_8b/" + std::to_string(sh.rows) + "x" +
                                 std::to_string(sh.cols) + "/b" + std::to_string(batch) + "/w" +
                                 std::to_string(wide);
        add(name + "/default",
            {TensorType::F16, sh.rows, sh.cols, batch, false, {.matvec_f16_wide = wide}});
        for (uint32_t threads : {32u, 64u, 128u, 256u})
          for (uint32_t rows : {1u, 2u, 4u, 8u})
            add(name + "/t" + std::to_string(threads) + "_r" + std::to_string(rows),
                {TensorType::F16,
                 sh.rows,
                 sh.cols,
                 batch,
                 false,
                 {.matvec_threads = threads, .matvec_rows = rows, .matvec_f16_wide = wide}});
      }
  // The same products at 8-32 tokens on the tensor cores: workgroup-scope (from one token) with
  // K split N ways, and subgroup-scope.
  for (Shape2 sh :
       {Shape2{6144, 4096}, Shape2{4096, 4096}, Shape2{28672, 4096}, Shape2{4096, 14336}})
    for (uint32_t m : {8u, 16u, 32u}) {
      const std::string name = "sweep_f16_gemm/" + std::to_string(sh.rows) + "x" +
                               std::to_string(sh.cols) + "/m" + std::to_string(m);
      for (uint32_t splits : {0u, 1u, 2u, 4u, 8u})
        add(name + "/cm2_s" + std::to_string(splits), {TensorType::F16,
                                                       sh.rows,
                                                       sh.cols,
                                                       m,
                                                       true,
                                                       {.cm_splits = splits, .cm2_min_tokens = 1}});
      add(name + "/coop",
          {TensorType::F16, sh.rows, sh.cols, m, true, {.coopmat2 = vk::CoopMat::Off}});
    }
  // Prefill's products at 512 tokens on the workgroup-scope GEMM, Llama 8B and 1B F16 shapes, K
  // split N ways (0: the default rule).
  for (Shape2 sh :
       {Shape2{6144, 4096}, Shape2{4096, 4096}, Shape2{28672, 4096}, Shape2{4096, 14336},
        Shape2{3072, 2048}, Shape2{2048, 2048}, Shape2{16384, 2048}, Shape2{2048, 8192}})
    for (uint32_t splits : {0u, 1u, 2u, 3u, 4u, 6u})
      add("sweep_prefill_f16/" + std::to_string(sh.rows) + "x" + std::to_string(sh.cols) +
              "/m512/s" + std::to_string(splits),
          {TensorType::F16, sh.rows, sh.cols, 512, true, {.cm_splits = splits}});
  return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
