// Memory planning (mapper/memory_plan.h): liveness over the op order, arena reuse by greedy
// best-fit, peaks, the fit against DRAM and KV-cache sizing. Every expected value is derived by
// hand in the comment beside it; sizes are int8 elements (1 byte each) unless stated.

#include "mapper/memory_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "testing/test_hardware.h"
#include "workloads/builders.h"

namespace coda::mapper {
namespace {

using workload::Function;
using workload::Graph;
using workload::Op;
using workload::TensorId;
using workload::TensorKind;
using workload::TensorRole;

TensorId add(Graph& g, std::string name, std::uint64_t elements,
             TensorKind kind = TensorKind::Activation, DataType dtype = DataType::Int8) {
  return g.add_tensor({std::move(name), {elements}, dtype, kind});
}

// y = copy(x) with its own sizes: a data movement may change the shape, so a chain's tensors
// can have any size.
Op copy(std::string name, std::uint64_t in, std::uint64_t out) {
  return workload::make_data_movement(std::move(name), Function::Copy, {{in}}, {{out}},
                                      DataType::Int8);
}

// A chain x0 -> op0 -> x1 -> op1 -> ... -> x_n of int8 tensors of `sizes` (x0 a graph input).
Graph chain(const std::vector<std::uint64_t>& sizes) {
  Graph g{"chain", "", {}, {}};
  std::vector<TensorId> x;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    x.push_back(add(g, "x" + std::to_string(i), sizes[i]));
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i)
    g.add(copy("op" + std::to_string(i), sizes[i], sizes[i + 1]), {x[i], x[i + 1]});
  return g;
}

using Interval = std::pair<std::size_t, std::size_t>;
Interval interval(const MemoryPlan& plan, std::size_t t) {
  return {plan.tensors[t].first, plan.tensors[t].last};
}
Interval ops(std::size_t first, std::size_t last) { return {first, last}; }

std::vector<std::uint64_t> values(const std::vector<Bytes>& bytes) {
  std::vector<std::uint64_t> out;
  out.reserve(bytes.size());
  for (const Bytes b : bytes) out.push_back(b.value);
  return out;
}

TEST(MemoryPlan, FiveOpChainLivenessArenaAndPeak) {
  // x0..x5 of 16, 64, 32, 48, 8, 24 bytes; op i reads x_i and writes x_{i+1}.
  const MemoryPlan plan = plan_memory(chain({16, 64, 32, 48, 8, 24}));
  ASSERT_TRUE(plan.problems.empty());
  // x0 is a graph input (never written): from op 0 to its reader op 0. x_i (i >= 1) is written
  // by op i-1 and read by op i. x5 is written and never read, and Graph::outputs is empty, so it
  // is a result: live to the end (op 4).
  EXPECT_EQ(interval(plan, 0), ops(0, 0));
  EXPECT_EQ(interval(plan, 1), ops(0, 1));
  EXPECT_EQ(interval(plan, 2), ops(1, 2));
  EXPECT_EQ(interval(plan, 3), ops(2, 3));
  EXPECT_EQ(interval(plan, 4), ops(3, 4));
  EXPECT_EQ(interval(plan, 5), ops(4, 4));
  for (const TensorLife& life : plan.tensors) EXPECT_EQ(life.residency, Residency::Transient);
  // Op i runs with x_i and x_{i+1} live: 16+64, 64+32, 32+48, 48+8, 8+24.
  EXPECT_EQ(values(plan.live_at_op), (std::vector<std::uint64_t>{80, 96, 80, 56, 32}));
  EXPECT_EQ(plan.peak_live, Bytes{96});
  EXPECT_EQ(plan.peak_op, 1u);
  EXPECT_EQ(plan.transient_without_reuse, Bytes{16 + 64 + 32 + 48 + 8 + 24});  // 192
  // Greedy, largest first: x1 (64, ops 0-1) at 0; x3 (48, ops 2-3) overlaps nothing placed: 0;
  // x2 (32, ops 1-2) overlaps x1 [0,64) and x3 [0,48): no gap, on top at 64; x5 (24, op 4)
  // overlaps only x4, not yet placed: 0; x0 (16, op 0) overlaps x1 [0,64): 64; x4 (8, ops 3-4)
  // overlaps x3 [0,48) and x5 [0,24): 48. Arena = x2's end 96 = the peak: no fragmentation.
  EXPECT_EQ(plan.tensors[1].offset, 0u);
  EXPECT_EQ(plan.tensors[3].offset, 0u);
  EXPECT_EQ(plan.tensors[2].offset, 64u);
  EXPECT_EQ(plan.tensors[5].offset, 0u);
  EXPECT_EQ(plan.tensors[0].offset, 64u);
  EXPECT_EQ(plan.tensors[4].offset, 48u);
  EXPECT_EQ(plan.arena, Bytes{96});
  EXPECT_EQ(plan.persistent, Bytes{0});
  EXPECT_EQ(plan.off_chip(), Bytes{96});
  // Working set: each op's input and output.
  EXPECT_EQ(values(plan.working_set), (std::vector<std::uint64_t>{80, 96, 80, 56, 32}));
}

// A chain A -> B -> C -> D (three ops): A [0,0], B [0,1], C [1,2], D [2,2], so only neighbours
// overlap, and at op i exactly the pair (x_i, x_{i+1}) is live. Any arena is therefore at least
// max(size_i + size_{i+1}). Greedy best-fit reaches that bound when each tensor it places finds
// its larger neighbours' blocks at the bottom or with a gap below them; the two cases below.
TEST(MemoryPlan, ChainWhereOnlyNeighboursOverlapNeedsTheLargestNeighbourPair) {
  {
    // A=10, B=40, C=30, D=20; pairs 50, 70, 50. Greedy: B at 0; C overlaps B: on top, 40; D
    // overlaps C [40,70): the gap [0,40) holds it: 0; A overlaps B [0,40): on top, 40.
    // Arena = C's end 70 = B + C.
    const MemoryPlan plan = plan_memory(chain({10, 40, 30, 20}));
    EXPECT_EQ(plan.peak_live, Bytes{70});
    EXPECT_EQ(plan.arena, Bytes{70});
    EXPECT_EQ(plan.transient_without_reuse, Bytes{100});
  }
  {
    // A=30, B=40, C=50, D=45; pairs 70, 90, 95. Greedy: C at 0; D overlaps C [0,50): 50; B
    // overlaps C [0,50): 50; A overlaps B [50,90): the gap [0,50) holds it: 0.
    // Arena = D's end 95 = C + D.
    const MemoryPlan plan = plan_memory(chain({30, 40, 50, 45}));
    EXPECT_EQ(plan.peak_live, Bytes{95});
    EXPECT_EQ(plan.arena, Bytes{95});
    EXPECT_EQ(plan.tensors[0].offset, 0u);
    EXPECT_EQ(plan.tensors[1].offset, 50u);
    EXPECT_EQ(plan.tensors[2].offset, 0u);
    EXPECT_EQ(plan.tensors[3].offset, 50u);
  }
}

// Greedy best-fit is a heuristic: on this chain it ends 80 bytes above the lower bound.
TEST(MemoryPlan, GreedyBestFitCanExceedThePeak) {
  // A=85, B=80, C=90, D=100; pairs A+B 165, B+C 170, C+D 190: peak 190, and 190 is reachable
  // (D 0, C 100, B 0, A 80). Greedy: D at 0; C overlaps D: 100; A overlaps only B, not yet
  // placed: 0; B overlaps A [0,85) and C [100,190): the gap [85,100) is 15 < 80, so on top at
  // 190. Arena 270.
  const MemoryPlan plan = plan_memory(chain({85, 80, 90, 100}));
  EXPECT_EQ(plan.peak_live, Bytes{190});
  EXPECT_EQ(plan.tensors[1].offset, 190u);
  EXPECT_EQ(plan.arena, Bytes{270});
}

// x -> h = relu(x) -> a = sigmoid(h), b = tanh(h) -> y = a + b -> out = y + x (the residual
// reads x again at the end). Every tensor is fp32 [32]: 128 bytes.
Graph diamond() {
  Graph g{"diamond", "", {}, {}};
  const std::vector<std::uint64_t> shape{32};
  const auto unary = [&](std::string name, Function f) {
    return workload::make_elementwise(std::move(name), f, shape, DataType::Fp32);
  };
  const auto binary = [&](std::string name) {
    return workload::make_elementwise(std::move(name), Function::Add, shape, DataType::Fp32,
                                      {{TensorRole::Input, {}}});
  };
  const TensorId x = add(g, "x", 32, TensorKind::Activation, DataType::Fp32);
  g.add(unary("h", Function::Relu), {x});                    // op 0 writes tensor 1 (h)
  g.add(unary("a", Function::Sigmoid), {TensorId{1}});       // op 1 writes tensor 2 (a)
  g.add(unary("b", Function::Tanh), {TensorId{1}});          // op 2 writes tensor 3 (b)
  g.add(binary("y"), {TensorId{2}, TensorId{3}});            // op 3 writes tensor 4 (y)
  g.add(binary("out"), {TensorId{4}, x});                    // op 4 writes tensor 5 (out)
  return g;
}

TEST(MemoryPlan, DiamondWithResidualLivenessAndPeak) {
  const Graph g = diamond();
  ASSERT_TRUE(workload::verify(g).empty());
  const MemoryPlan plan = plan_memory(g);
  // x: input, last read by op 4; h: ops 0-2 (read by a and b); a: 1-3; b: 2-3; y: 3-4;
  // out: a result, written by op 4, live to the end (op 4).
  EXPECT_EQ(interval(plan, 0), ops(0, 4));
  EXPECT_EQ(interval(plan, 1), ops(0, 2));
  EXPECT_EQ(interval(plan, 2), ops(1, 3));
  EXPECT_EQ(interval(plan, 3), ops(2, 3));
  EXPECT_EQ(interval(plan, 4), ops(3, 4));
  EXPECT_EQ(interval(plan, 5), ops(4, 4));
  // Live per op (x 128 each): op0 {x,h} 2, op1 {x,h,a} 3, op2 {x,h,a,b} 4, op3 {x,a,b,y} 4,
  // op4 {x,y,out} 3 tensors.
  EXPECT_EQ(values(plan.live_at_op), (std::vector<std::uint64_t>{256, 384, 512, 512, 384}));
  EXPECT_EQ(plan.peak_live, Bytes{512});
  EXPECT_EQ(plan.peak_op, 2u);  // the first op at the peak
  EXPECT_EQ(plan.peak_activations, Bytes{512});
  EXPECT_EQ(plan.transient_without_reuse, Bytes{768});  // 6 tensors x 128
  // All sizes equal, so the order is by interval length, then start: x (4), h (2, start 0),
  // a (2, start 1), b (1, start 2), y (1, start 3), out (0). x 0; h overlaps x: 128; a overlaps
  // x, h: 256; b overlaps x, h, a: 384; y overlaps x [0,128), a [256,384), b [384,512): the gap
  // [128,256) (h's, dead by op 3) holds it: 128; out overlaps x [0,128), y [128,256): 256.
  const std::vector<std::uint64_t> offsets{0, 128, 256, 384, 128, 256};
  for (std::size_t t = 0; t < offsets.size(); ++t) EXPECT_EQ(plan.tensors[t].offset, offsets[t]);
  EXPECT_EQ(plan.arena, Bytes{512});
}

// Tensors of every kind: x (act), w (weight), kv (KV cache), g (gradient), m (optimizer state),
// y (act), 64 bytes each, and an activation of 1000 bytes no op touches.
//   op0: y = x * w       op1: g = y + kv       op2: m = m + g (in place)
Graph every_kind() {
  Graph g{"kinds", "", {}, {}};
  const TensorId x = add(g, "x", 64);
  const TensorId w = add(g, "w", 64, TensorKind::Weight);
  const TensorId kv = add(g, "kv", 64, TensorKind::KvCache);
  const TensorId grad = add(g, "g", 64, TensorKind::Gradient);
  const TensorId m = add(g, "m", 64, TensorKind::OptimizerState);
  const TensorId y = add(g, "y", 64);
  add(g, "unused", 1000);
  g.add(workload::make_elementwise("mul", Function::Mul, {64}, DataType::Int8,
                                   {{TensorRole::Weight, {}}}),
        {x, w, y});
  g.add(workload::make_elementwise("add", Function::Add, {64}, DataType::Int8,
                                   {{TensorRole::Input, {}}}),
        {y, kv, grad});
  g.add(workload::make_elementwise("update", Function::Add, {64}, DataType::Int8,
                                   {{TensorRole::Input, {}}}),
        {m, grad, m});
  return g;
}

TEST(MemoryPlan, PersistentAndTransientClassification) {
  const Graph g = every_kind();
  ASSERT_TRUE(workload::verify(g).empty());
  const MemoryPlan plan = plan_memory(g);
  ASSERT_TRUE(plan.problems.empty());
  const std::vector<Residency> expected{Residency::Transient,  Residency::Persistent,
                                        Residency::Persistent, Residency::Transient,
                                        Residency::Persistent, Residency::Transient,
                                        Residency::Unused};
  for (std::size_t t = 0; t < expected.size(); ++t)
    EXPECT_EQ(plan.tensors[t].residency, expected[t]) << g.tensors[t].name;
  // Persistent tensors live over the whole run, laid out in id order: w 0, kv 64, m 128.
  EXPECT_EQ(interval(plan, 1), ops(0, 2));
  EXPECT_EQ(plan.tensors[1].offset, 0u);
  EXPECT_EQ(plan.tensors[2].offset, 64u);
  EXPECT_EQ(plan.tensors[4].offset, 128u);
  EXPECT_EQ(plan.weights, Bytes{64});
  EXPECT_EQ(plan.kv_cache, Bytes{64});
  EXPECT_EQ(plan.optimizer_state, Bytes{64});
  EXPECT_EQ(plan.persistent, Bytes{192});
  // x: op 0; y: ops 0-1; g: written by op 1, read by op 2. The in-place update of m is not a
  // write, so nothing is written and unread: no results. The unused tensor takes no memory.
  EXPECT_EQ(interval(plan, 0), ops(0, 0));
  EXPECT_EQ(interval(plan, 5), ops(0, 1));
  EXPECT_EQ(interval(plan, 3), ops(1, 2));
  EXPECT_EQ(plan.transient_without_reuse, Bytes{192});
  EXPECT_EQ(values(plan.live_at_op), (std::vector<std::uint64_t>{128, 128, 64}));
  EXPECT_EQ(plan.peak_live, Bytes{128});
  EXPECT_EQ(plan.peak_op, 0u);
  EXPECT_EQ(plan.peak_activations, Bytes{128});  // x and y at op 0
  EXPECT_EQ(plan.peak_gradients, Bytes{0});      // g starts at op 1
  // y (ops 0-1) at 0, g (1-2) on top of y at 64, x (0) on top of y at 64: arena 128.
  EXPECT_EQ(plan.arena, Bytes{128});
  EXPECT_EQ(plan.off_chip(), Bytes{192 + 128});
  // Working sets: op0 x, w, y; op1 y, kv, g; op2 m, g (m once though bound twice).
  EXPECT_EQ(values(plan.working_set), (std::vector<std::uint64_t>{192, 192, 128}));
}

TEST(MemoryPlan, DeadWritesEndAtTheirWriterWhenOutputsAreListed) {
  // op0: y = relu(x); op1: z = relu(y); op2: w = relu(y). outputs = {z}: w is a dead write.
  Graph g{"dead", "", {}, {}};
  const TensorId x = add(g, "x", 8);
  const auto relu = [](std::string name) {
    return workload::make_elementwise(std::move(name), Function::Relu, {8}, DataType::Int8);
  };
  g.add(relu("y"), {x});             // tensor 1
  g.add(relu("z"), {TensorId{1}});   // tensor 2
  g.add(relu("w"), {TensorId{1}});   // tensor 3
  g.outputs = {TensorId{2}};
  MemoryPlan plan = plan_memory(g);
  EXPECT_EQ(interval(plan, 2), ops(1, 2));  // a result: to the end
  EXPECT_EQ(interval(plan, 3), ops(2, 2));  // dead: its writer only
  // Without a list every written, unread tensor is a result: z and w both live to op 2.
  g.outputs.clear();
  plan = plan_memory(g);
  EXPECT_EQ(interval(plan, 2), ops(1, 2));
  EXPECT_EQ(interval(plan, 3), ops(2, 2));
  // A listed output that is a graph input no op touches still lives the whole run.
  g.outputs = {TensorId{2}, add(g, "passthrough", 4)};
  plan = plan_memory(g);
  EXPECT_EQ(plan.tensors[4].residency, Residency::Transient);
  EXPECT_EQ(interval(plan, 4), ops(0, 2));
}

TEST(MemoryPlan, InPlaceUpdatesExtendALifeButDoNotStartIt) {
  // op0: g = x * x (writes g); op1: g = g + x (in place); op3: y = relu(g). A gradient h that is
  // only updated in place (op2) is never written: it is live from the start.
  Graph g{"accumulate", "", {}, {}};
  const TensorId x = add(g, "x", 16);
  const TensorId grad = add(g, "g", 16, TensorKind::Gradient);
  const TensorId h = add(g, "h", 16, TensorKind::Gradient);
  const auto binary = [](std::string name, Function f) {
    return workload::make_elementwise(std::move(name), f, {16}, DataType::Int8,
                                      {{TensorRole::Input, {}}});
  };
  g.add(binary("square", Function::Mul), {x, x, grad});
  g.add(binary("acc", Function::Add), {grad, x, grad});
  g.add(binary("acc_h", Function::Add), {h, x, h});
  g.add(workload::make_elementwise("y", Function::Relu, {16}, DataType::Int8), {grad});
  const MemoryPlan plan = plan_memory(g);
  EXPECT_EQ(interval(plan, 1), ops(0, 3));
  EXPECT_EQ(interval(plan, 2), ops(0, 2));
  EXPECT_EQ(plan.tensors[1].residency, Residency::Transient);
}

TEST(MemoryPlan, MalformedBindingsAreReportedNotFatal) {
  Graph g{"bad", "", {}, {}};
  add(g, "x", 8);
  Op op = workload::make_elementwise("relu", Function::Relu, {8}, DataType::Int8);
  op.tensors = {TensorId{0}, TensorId{99}};  // the output is not a tensor of the graph
  g.ops.push_back(op);
  op.tensors = {TensorId{0}};  // one binding for two accesses
  g.ops.push_back(op);
  g.outputs = {TensorId{42}};
  const MemoryPlan plan = plan_memory(g);
  EXPECT_EQ(plan.problems.size(), 3u);
  EXPECT_EQ(interval(plan, 0), ops(0, 1));  // read by both ops
  EXPECT_EQ(plan.arena, Bytes{8});
}

// The greedy's rule done the slow, obvious way: for each tensor in order (largest first, then
// the longer interval, the earlier start, the lower id), every placed tensor whose interval
// overlaps, sorted by offset; the smallest gap that holds it, else the top.
std::vector<std::uint64_t> reference_offsets(const MemoryPlan& plan) {
  std::vector<std::size_t> order;
  for (std::size_t t = 0; t < plan.tensors.size(); ++t)
    if (plan.tensors[t].residency == Residency::Transient && plan.tensors[t].bytes.value > 0)
      order.push_back(t);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const TensorLife& x = plan.tensors[a];
    const TensorLife& y = plan.tensors[b];
    return std::make_tuple(-static_cast<std::int64_t>(x.bytes.value), y.last - y.first, x.first,
                           a) < std::make_tuple(-static_cast<std::int64_t>(y.bytes.value),
                                                x.last - x.first, y.first, b);
  });
  std::vector<std::uint64_t> offsets(plan.tensors.size());
  std::vector<std::size_t> placed;
  for (const std::size_t t : order) {
    const TensorLife& life = plan.tensors[t];
    std::vector<std::pair<std::uint64_t, std::uint64_t>> blocks;
    for (const std::size_t p : placed)
      if (plan.tensors[p].first <= life.last && life.first <= plan.tensors[p].last)
        blocks.emplace_back(offsets[p], offsets[p] + plan.tensors[p].bytes.value);
    std::sort(blocks.begin(), blocks.end());
    std::uint64_t top = 0, best = 0, best_gap = ~std::uint64_t{0};
    bool found = false;
    for (const auto& [begin, end] : blocks) {
      if (begin > top && begin - top >= life.bytes.value && begin - top < best_gap) {
        best = top;
        best_gap = begin - top;
        found = true;
      }
      top = std::max(top, end);
    }
    offsets[t] = found ? best : top;
    placed.push_back(t);
  }
  return offsets;
}

TEST(MemoryPlan, ArenaMatchesTheObviousGreedyOnRandomGraphs) {
  std::mt19937_64 rng(20240611);  // fixed: the test is deterministic
  for (int trial = 0; trial < 20; ++trial) {
    // Each op concatenates one or two earlier tensors (or fresh graph inputs) into a new one of
    // 1..64 bytes (sizes from a few values, so ties occur); some results are gradients.
    Graph g{"random", "", {}, {}};
    std::vector<TensorId> made;
    const std::uint64_t sizes[] = {8, 16, 16, 24, 32, 64};
    const auto pick_size = [&] { return sizes[rng() % std::size(sizes)]; };
    for (int op = 0; op < 60; ++op) {
      std::vector<TensorId> bound;
      std::vector<std::vector<std::uint64_t>> in_shapes;
      const std::size_t inputs = 1 + rng() % 2;
      for (std::size_t i = 0; i < inputs; ++i) {
        // A fresh input, or one of the last 12 tensors made.
        const bool fresh = made.empty() || rng() % 8 == 0;
        const TensorId t =
            fresh ? add(g, "in", pick_size())
                  : made[made.size() - 1 - rng() % std::min<std::size_t>(made.size(), 12)];
        bound.push_back(t);
        in_shapes.push_back(g.tensor(t).shape);
      }
      const std::uint64_t out = pick_size();
      const TensorKind kind = rng() % 5 == 0 ? TensorKind::Gradient : TensorKind::Activation;
      bound.push_back(add(g, "t", out, kind));
      made.push_back(bound.back());
      g.add(workload::make_data_movement("op", Function::Concat, in_shapes, {{out}},
                                         DataType::Int8),
            bound);
    }
    if (trial % 2 == 1) g.outputs = {made.back()};
    ASSERT_TRUE(workload::verify(g).empty());
    const MemoryPlan plan = plan_memory(g);
    const auto expected = reference_offsets(plan);
    std::uint64_t arena = 0;
    for (const TensorLife& life : plan.tensors) {
      if (life.residency != Residency::Transient) continue;
      EXPECT_EQ(life.offset, expected[life.tensor.value]) << "trial " << trial;
      arena = std::max(arena, life.offset + life.bytes.value);
      // No two tensors live at the same op share a byte.
      for (const TensorLife& other : plan.tensors) {
        if (other.residency == Residency::Transient && other.tensor < life.tensor &&
            other.first <= life.last && life.first <= other.last) {
          EXPECT_TRUE(other.offset + other.bytes.value <= life.offset ||
                      life.offset + life.bytes.value <= other.offset);
        }
      }
    }
    EXPECT_EQ(plan.arena, Bytes{arena});
    EXPECT_GE(plan.arena, plan.peak_live);
    EXPECT_LE(plan.arena, plan.transient_without_reuse);
  }
}

TEST(MemoryPlan, EmptyGraph) {
  const MemoryPlan plan = plan_memory(Graph{});
  EXPECT_EQ(plan.arena, Bytes{0});
  EXPECT_TRUE(plan.live_at_op.empty());
}

// ---- fit against DRAM ----

// One core with a 128-byte scratchpad and 256 bytes of DRAM.
constexpr std::string_view kTinyDram = R"(schema_version: 2
name: tiny
clock: 1 GHz
compute:
  - {name: simd, kind: vector, ops_per_cycle: {int8: 16}}
memory:
  - {name: spad, capacity: 128 B}
dram: {capacity: 256 B, bandwidth: 1 GB/s}
)";

TEST(MemoryPlanFit, TooLargeForDramIsAValueWithTheNumbers) {
  const MemoryPlan plan = plan_memory(every_kind());
  const FitReport fit = check_fit(plan, testing::parse_arch(kTinyDram));
  // Needed = persistent 192 + arena 128 = 320 of 256 bytes: 64 over.
  EXPECT_EQ(fit.status, FitStatus::DoesNotFit);
  EXPECT_FALSE(fit.fits());
  EXPECT_EQ(fit.needed, Bytes{320});
  EXPECT_EQ(fit.available, Bytes{256});
  EXPECT_EQ(fit.excess, Bytes{64});
  EXPECT_EQ(fit.headroom, Bytes{0});
  // Largest first; ties keep the order weights, kv cache, optimizer state. Activations: x and y
  // live at the peak op 0 (128); no gradient is live there, and the arena equals the peak, so
  // there is no fragmentation. 128 + 64 * 3 = 320.
  EXPECT_EQ(fit.contributors,
            (std::vector<Contributor>{{"activations", Bytes{128}},
                                      {"weights", Bytes{64}},
                                      {"kv cache", Bytes{64}},
                                      {"optimizer state", Bytes{64}}}));
  EXPECT_EQ(fit.reason,
            "needs 320 B of DRAM, 256 B available: 64 B over; activations 128 B, weights 64 B, "
            "kv cache 64 B, optimizer state 64 B");
  // On chip: one 128-byte level. Working sets 192, 192, 128: ops 0 and 1 exceed it.
  EXPECT_EQ(fit.on_chip, Bytes{128});
  EXPECT_EQ(fit.ops_over_on_chip, (std::vector<std::size_t>{0, 1}));
}

TEST(MemoryPlanFit, FitsAndUnknownCapacity) {
  const MemoryPlan plan = plan_memory(every_kind());
  std::string yaml{kTinyDram};
  yaml.replace(yaml.find("256 B"), 5, "1 KiB");
  const FitReport fit = check_fit(plan, testing::parse_arch(yaml));
  EXPECT_TRUE(fit.fits());
  EXPECT_EQ(fit.headroom, Bytes{1024 - 320});
  EXPECT_EQ(fit.excess, Bytes{0});

  // mini-gpu states no DRAM capacity. On chip: smem 100 KiB x 4 cores + l2 4 MiB
  // = 409,600 + 4,194,304 bytes.
  const FitReport unknown = check_fit(plan, testing::parse_arch(testing::kMiniGpu));
  EXPECT_EQ(unknown.status, FitStatus::UnknownCapacity);
  EXPECT_EQ(unknown.needed, Bytes{320});
  EXPECT_EQ(unknown.on_chip, Bytes{409'600 + 4'194'304});
  EXPECT_TRUE(unknown.ops_over_on_chip.empty());
}

TEST(MemoryPlanFit, ArenaFragmentationIsAContributor) {
  // The chain of GreedyBestFitCanExceedThePeak: arena 270, peak 190 (A 85 is not live at the
  // peak op 2, where C and D are), so 80 bytes of fragmentation.
  const MemoryPlan plan = plan_memory(chain({85, 80, 90, 100}));
  const FitReport fit = check_fit(plan, testing::parse_arch(kTinyDram));
  EXPECT_EQ(fit.needed, Bytes{270});
  EXPECT_EQ(fit.excess, Bytes{14});
  EXPECT_EQ(fit.contributors, (std::vector<Contributor>{{"activations", Bytes{190}},
                                                        {"arena fragmentation", Bytes{80}}}));
}

// ---- KV-cache sizing ----

// LLaMA-2-7B's attention: 32 layers, 32 kv heads (MHA), head_dim 128, fp16.
workload::llm::LlmConfig llama2_7b_like() {
  workload::llm::LlmConfig c;
  c.name = "llama2-7b-like";
  c.hidden = 4096;
  c.layers = 32;
  c.heads = 32;
  c.kv_heads = 32;
  c.head_dim = 128;
  c.ffn = 11008;
  c.ffn_type = workload::llm::FfnType::SwiGlu;
  c.norm = workload::llm::NormType::RmsNorm;
  c.vocab = 32000;
  c.dtype = DataType::Fp16;
  return c;
}

// 80 GB of DRAM (SI: 80e9 bytes) beside 13.5 GB (13.5e9 bytes) of weights.
constexpr KvBudget kA100{.capacity = Bytes{80'000'000'000},
                         .persistent_non_kv = Bytes{13'500'000'000},
                         .transient = Bytes{0}};

TEST(KvCacheSizing, Llama2_7bOn80GB) {
  // 2 (K, V) x 32 layers x 32 kv heads x 128 x 2 bytes = 524,288 bytes (512 KiB) per token.
  const Bytes per_token = kv_cache_bytes_per_token(llama2_7b_like());
  EXPECT_EQ(per_token, Bytes{524'288});
  // Room = 80e9 - 13.5e9 = 66,500,000,000. 524,288 x 126,838 = 66,499,641,344 <= room, and one
  // more token would need 358,656 + ... > the 358,656 bytes left: 126,838 tokens.
  const KvFit tokens = max_kv_tokens(kA100, per_token);
  EXPECT_EQ(tokens.count, 126'838u);
  EXPECT_EQ(tokens.room, Bytes{66'500'000'000});
  EXPECT_EQ(tokens.kv_bytes, Bytes{66'499'641'344});
  EXPECT_TRUE(tokens.reason.empty());
  // 4096-token sequences: floor(126,838 / 4096) = 30 (30 x 4096 = 122,880; 31 x 4096 = 126,976
  // is too many), 30 x 4096 x 524,288 = 64,424,509,440 bytes.
  const KvFit batch = max_kv_batch(kA100, per_token, 4096);
  EXPECT_EQ(batch.count, 30u);
  EXPECT_EQ(batch.kv_bytes, Bytes{64'424'509'440});
  // With a 2 GB transient peak beside them: room 64.5e9, floor(64.5e9 / 524,288) = 123,023.
  KvBudget busy = kA100;
  busy.transient = Bytes{2'000'000'000};
  EXPECT_EQ(max_kv_tokens(busy, per_token).count, 123'023u);
}

TEST(KvCacheSizing, PerRankShare) {
  // TP 2 halves the kv heads, PP 4 quarters the layers: 524,288 / 8 = 65,536 bytes per token.
  EXPECT_EQ(kv_cache_bytes_per_token(llama2_7b_like(), {.tp = 2, .pp = 4}), Bytes{65'536});
}

TEST(KvCacheSizing, CallbacksForNonLinearCaches) {
  constexpr std::uint64_t kPerToken = 524'288;
  const KvBytesFn linear = [](std::uint64_t b, std::uint64_t c) {
    return Bytes{b * c * kPerToken};
  };
  // Paged: each sequence holds whole 16-token blocks.
  const KvBytesFn paged = [](std::uint64_t b, std::uint64_t c) {
    return Bytes{b * ((c + 15) / 16 * 16) * kPerToken};
  };
  // The budget holds 126,838 tokens (KvCacheSizing.Llama2_7bOn80GB).
  EXPECT_EQ(max_kv_batch(kA100, linear, 4096, 1000).count, 30u);
  // 1025-token sequences: linear floor(126,838 / 1025) = 123 (123 x 1025 = 126,075); paged each
  // takes 65 blocks = 1040 tokens, floor(126,838 / 1040) = 121 (121 x 1040 = 125,840).
  EXPECT_EQ(max_kv_batch(kA100, linear, 1025, 1000).count, 123u);
  const KvFit paged_fit = max_kv_batch(kA100, paged, 1025, 1000);
  EXPECT_EQ(paged_fit.count, 121u);
  EXPECT_EQ(paged_fit.kv_bytes, Bytes{125'840 * kPerToken});
  // The search stops at the limit.
  EXPECT_EQ(max_kv_batch(kA100, linear, 1025, 50).count, 50u);
  // Batch 8: floor(126,838 / 8) = 15,854 tokens of context each (8 x 15,855 = 126,840 > 126,838).
  EXPECT_EQ(max_kv_context(kA100, linear, 8, 1'000'000).count, 15'854u);
}

TEST(KvCacheSizing, NoRoomIsAValueWithAReason) {
  // 10 GB of DRAM under 13.5 GB of weights.
  const KvBudget small{.capacity = Bytes{10'000'000'000},
                       .persistent_non_kv = Bytes{13'500'000'000},
                       .transient = Bytes{0}};
  const KvFit fit = max_kv_tokens(small, Bytes{524'288});
  EXPECT_EQ(fit.count, 0u);
  EXPECT_EQ(fit.room, Bytes{0});
  EXPECT_FALSE(fit.reason.empty());
  EXPECT_EQ(max_kv_batch(small, Bytes{524'288}, 4096).count, 0u);
  // Room for less than one sequence: 1 MiB of room, 4096 x 512 KiB per sequence.
  const KvBudget tight{.capacity = Bytes{1 << 20}, .persistent_non_kv = {}, .transient = {}};
  const KvFit none = max_kv_batch(tight, Bytes{524'288}, 4096);
  EXPECT_EQ(none.count, 0u);
  EXPECT_FALSE(none.reason.empty());
  EXPECT_EQ(max_kv_tokens(tight, Bytes{524'288}).count, 2u);  // 1 MiB / 512 KiB
  // No function: a reason, not a std::bad_function_call.
  const KvFit no_fn = max_kv_batch(kA100, KvBytesFn{}, 4096, 100);
  EXPECT_EQ(no_fn.count, 0u);
  EXPECT_FALSE(no_fn.reason.empty());
}

TEST(KvCacheSizing, BudgetFromAPlan) {
  // every_kind: persistent 192 of which 64 KV cache, arena 128. With 1 KiB of DRAM the room is
  // 1024 - 128 - 128 = 768 bytes: 12 tokens of 64 bytes.
  const MemoryPlan plan = plan_memory(every_kind());
  const KvBudget budget = kv_budget(plan, Bytes{1024});
  EXPECT_EQ(budget.persistent_non_kv, Bytes{128});
  EXPECT_EQ(budget.transient, Bytes{128});
  EXPECT_EQ(max_kv_tokens(budget, Bytes{64}).count, 12u);
}

}  // namespace
}  // namespace coda::mapper
