// How close the heuristic and annealing searches come to the best mapping (the Mapper issue: "The
// heuristic and the stochastic search find mappings within 2% of exhaustive on a set of ResNet-50
// and LLaMA-2-7B layers"), and with how many evaluations.
//
// Layers, taken by name from the graphs the workload builders make:
//   ResNet-50 (workload::cnn::resnet50, batch 1, 224 x 224, int8):
//     stem.conv         7x7/2, 3 -> 64, 112 x 112 out
//     layer1.0.2.conv   3x3, 64 -> 64, 56 x 56           (stage 2)
//     layer2.1.1.conv   1x1, 512 -> 128, 28 x 28         (stage 3)
//     layer3.1.2.conv   3x3, 256 -> 256, 14 x 14         (stage 4)
//     layer4.1.3.conv   1x1, 512 -> 2048, 7 x 7          (stage 5)
//     fc                2048 -> 1000
//   LLaMA-2-7B (workload::llm, configs/workloads/llm/llama2_7b.yaml, TP 1, layer 0):
//     prefill of kPrefillTokens tokens: qkv (4096 -> 3 x 4096, fused), out (4096 -> 4096),
//     ffn.gate (4096 -> 11008), ffn.down (11008 -> 4096);
//     decode of one token after kPrefillTokens: qkv and ffn.down (GEMVs, m = 1).
// Hierarchies: configs/arch/google_tpu_v4.yaml (systolic: PE registers, VMEM per core fanning
// out to 4 x 128 x 128 PEs, CMEM fanning out to the 2 cores, HBM) and
// configs/arch/nvidia_h100_sxm.yaml (tensor cores), at each op's precision (mapper::make_hierarchy).
//
// The spaces are restricted so that exhaustive search finishes: the real map space of these
// layers has 10^12 to 10^20 points. The restriction is the same for every strategy (they all
// search the one MapSpace), so the gap is a true gap within it:
//   * MapSpaceOptions{.imperfect = false}: perfect factorizations only;
//   * the layer's extents are used as they are, but the hierarchy keeps only one on-chip level
//     below DRAM besides the PEs' registers: TPU v4 without CMEM (one TensorCore's VMEM, the
//     cores' fan-out folded into VMEM's), H100 with its innermost level and L2 only when that
//     already fits, else its innermost level only. See `restrict()`.
// Every strategy then searches the whole restricted space (dims, tiles at every kept level,
// spatial factors, loop orders), which still has 10^5 to 10^9 points; the exhaustive search
// enumerates every valid one on all cores.
//
// Per layer: the space's points and valid points, exhaustive's best score (latency in cycles)
// and time, then for the heuristic and annealing (seed 1; a budget of --budget evaluations, 20000
// by default, but at most a 40th of the space's points and at least 500): the gap to exhaustive
// in %, evaluations, evaluations / points, and seconds.
//
// A second table runs the same layers in their full spaces (the presets' whole hierarchies,
// default MapSpaceOptions: 10^6 to 10^20 points), where the reference is not exhaustive but the
// best of the heuristic and annealing with 200000 evaluations each (other seeds): it shows how
// much the default 20000-evaluation searches leave on the table where the spaces are real.
//
//   cmake --build build-quality --target bench_mapper_quality
//   ./build-quality/bench/bench_mapper_quality [--threads N] [--budget N] [--only SUBSTRING]
// (from the repository top: it reads configs/).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "arch/arch_spec.h"
#include "arch/hardware_model.h"
#include "mapper/schedule.h"
#include "mapper/search.h"
#include "workloads/cnn/cnn_zoo.h"
#include "workloads/llm/llm_builder.h"
#include "workloads/llm/llm_config.h"

namespace {

using namespace coda;

constexpr std::uint64_t kPrefillTokens = 64;

struct Layer {
  std::string name;  // network / op
  workload::Op op;
};

const workload::Op& find_op(const workload::Graph& g, std::string_view name) {
  for (const workload::Op& op : g.ops)
    if (op.name == name) return op;
  throw std::runtime_error(fmt::format("{} has no op '{}'", g.name, name));
}

std::vector<Layer> layers() {
  std::vector<Layer> out;
  const workload::Graph resnet = workload::cnn::resnet50();
  for (const char* name : {"stem.conv", "layer1.0.2.conv", "layer2.1.1.conv", "layer3.1.2.conv",
                           "layer4.1.3.conv", "fc"})
    out.push_back({fmt::format("resnet50/{}", name), find_op(resnet, name)});

  Diagnostics diags;
  const auto llama = workload::llm::load_llm_config("configs/workloads/llm/llama2_7b.yaml", diags);
  if (!llama) throw std::runtime_error(diags.format_all());
  const auto build = [&](workload::llm::PhaseKind kind) {
    auto g = workload::llm::try_build_llm(*llama, {.kind = kind, .batch = 1,
                                                   .seq_len = kPrefillTokens},
                                          {}, diags);
    if (!g) throw std::runtime_error(diags.format_all());
    return std::move(*g);
  };
  const workload::Graph prefill = build(workload::llm::PhaseKind::Prefill);
  const workload::Graph decode = build(workload::llm::PhaseKind::Decode);
  const auto first = [](const workload::Graph& g, std::string_view suffix) -> const workload::Op& {
    for (const workload::Op& op : g.ops)
      if (op.kind == workload::OpKind::Contraction && op.name.ends_with(suffix)) return op;
    throw std::runtime_error(fmt::format("{} has no contraction '*{}'", g.name, suffix));
  };
  for (const char* name : {"qkv", "out", "ffn.gate", "ffn.down"})
    out.push_back({fmt::format("llama2-7b/prefill{}/{}", kPrefillTokens, name),
                   first(prefill, name)});
  for (const char* name : {"qkv", "ffn.down"})
    out.push_back({fmt::format("llama2-7b/decode/{}", name), first(decode, name)});
  return out;
}

// The hierarchy of the space searched; see the header comment.
mapper::Hierarchy restrict(mapper::Hierarchy h) {
  mapper::StorageLevel chip = h.levels[h.levels.size() - 2];
  chip.instances = 1;
  chip.fan_out = h.compute.pes;
  h.levels = {chip, h.levels.back()};
  return h;
}

// Loop orders are explored where the op has at most 4 dims above 1 (GEMMs, 1x1 convs: at most
// 4! orders at DRAM); a conv with a window keeps the ascending order (6 loops: 720 orders).
mapper::MapSpaceOptions options_for(const workload::Op& op) {
  std::size_t loops = 0;
  for (const workload::Dim& d : op.space.dims)
    if (d.extent > 1) ++loops;
  return {.imperfect = false, .explore_orders = loops <= 4};
}

struct Run {
  double score = 0;
  std::uint64_t evaluated = 0;
  double seconds = 0;
  bool found = false;
};

template <class F>
Run timed(F&& search) {
  const auto start = std::chrono::steady_clock::now();
  const mapper::SearchOutcome out = search();
  Run r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.evaluated = out.evaluated;
  r.found = out.found();
  if (r.found) r.score = out.best.front().score;
  return r;
}

// The same layers in their full map spaces (the presets' whole hierarchies, default options:
// ceil splits, every loop order), where exhaustive search is out of reach. The reference is the
// best of the heuristic and annealing with kReferenceBudget evaluations each (seeds 2 and 3); the
// table gives each strategy's gap to it at `budget` evaluations (seed 1), which is what
// `coda map` runs by default. A negative gap: the short run beat the reference.
constexpr std::uint64_t kReferenceBudget = 200'000;

void full_spaces(const std::vector<Layer>& all, std::uint64_t budget, const std::string& only) {
  const mapper::SearchGoal goal{mapper::Objective::Latency};
  std::printf("\nfull spaces (reference: best of heuristic and annealing at %llu evaluations)\n",
              static_cast<unsigned long long>(kReferenceBudget));
  std::printf("%-36s %-5s %10s %14s | %7s %7s %6s | %7s %7s %6s\n", "layer", "arch", "points",
              "reference", "heur %", "evals", "s", "anneal%", "evals", "s");
  double worst_heuristic = -100;
  double worst_annealing = -100;
  for (const char* arch_file : {"configs/arch/google_tpu_v4.yaml",
                                "configs/arch/nvidia_h100_sxm.yaml"}) {
    Diagnostics diags;
    const auto arch = arch::load_arch(arch_file, diags);
    if (!arch) throw std::runtime_error(diags.format_all());
    const arch::HardwareModel hw(arch->spec);
    const std::string short_name =
        std::string_view(arch_file).find("tpu") != std::string::npos ? "tpu4" : "h100";
    for (const Layer& layer : all) {
      if (!only.empty() && layer.name.find(only) == std::string::npos &&
          short_name.find(only) == std::string::npos)
        continue;
      const mapper::Hierarchy h = mapper::make_hierarchy(hw, mapper::op_precision(layer.op));
      std::string why;
      const auto space = mapper::MapSpace::create(layer.op.space, h, {}, why);
      if (!space) {
        std::printf("%-36s %-5s no map space: %s\n", layer.name.c_str(), short_name.c_str(),
                    why.c_str());
        continue;
      }
      const auto run = [&](mapper::Strategy s, std::uint64_t seed, std::uint64_t evaluations) {
        return timed([&] {
          const auto strategy = mapper::make_strategy(s, *space, seed, evaluations);
          return mapper::run_search(*space, *strategy, goal, {.max_evaluations = evaluations});
        });
      };
      const Run ref_h = run(mapper::Strategy::Heuristic, 2, kReferenceBudget);
      const Run ref_a = run(mapper::Strategy::Annealing, 3, kReferenceBudget);
      if (!ref_h.found && !ref_a.found) continue;
      const double reference = !ref_h.found   ? ref_a.score
                               : !ref_a.found ? ref_h.score
                                              : std::min(ref_h.score, ref_a.score);
      const Run heuristic = run(mapper::Strategy::Heuristic, 1, budget);
      const Run annealing = run(mapper::Strategy::Annealing, 1, budget);
      const auto gap = [&](const Run& r) {
        return r.found ? (r.score / reference - 1) * 100 : 1e9;
      };
      worst_heuristic = std::max(worst_heuristic, gap(heuristic));
      worst_annealing = std::max(worst_annealing, gap(annealing));
      std::printf("%-36s %-5s %10.3g %14.6g | %7.2f %7llu %6.2f | %7.2f %7llu %6.2f\n",
                  layer.name.c_str(), short_name.c_str(), static_cast<double>(space->size()),
                  reference, gap(heuristic), static_cast<unsigned long long>(heuristic.evaluated),
                  heuristic.seconds, gap(annealing),
                  static_cast<unsigned long long>(annealing.evaluated), annealing.seconds);
      std::fflush(stdout);
    }
  }
  std::printf("worst gap to the reference: heuristic %.2f%%, annealing %.2f%%\n",
              worst_heuristic, worst_annealing);
}

}  // namespace

int main(int argc, char** argv) {
  unsigned threads = std::max(1U, std::thread::hardware_concurrency());
  std::uint64_t budget = 20'000;
  std::string only;
  bool sizes_only = false;
  mapper::AnnealingOptions temperatures;
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--sizes") sizes_only = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--threads") threads = static_cast<unsigned>(std::stoul(argv[i + 1]));
    else if (flag == "--budget") budget = std::stoull(argv[i + 1]);
    else if (flag == "--only") only = argv[i + 1];
    else if (flag == "--t0") temperatures.initial_temperature = std::stod(argv[i + 1]);
    else if (flag == "--t1") temperatures.final_temperature = std::stod(argv[i + 1]);
  }
  try {
    const std::vector<Layer> all = layers();
    const mapper::SearchGoal goal{mapper::Objective::Latency};
    std::printf("%-36s %-5s %10s %10s %14s %7s | %7s %7s %8s %6s | %7s %7s %8s %6s\n", "layer",
                "arch", "points", "valid", "exhaustive", "s", "heur %", "evals", "evals/p",
                "s", "anneal%", "evals", "evals/p", "s");
    double worst_heuristic = 0;
    double worst_annealing = 0;
    for (const char* arch_file : {"configs/arch/google_tpu_v4.yaml",
                                  "configs/arch/nvidia_h100_sxm.yaml"}) {
      Diagnostics diags;
      const auto arch = arch::load_arch(arch_file, diags);
      if (!arch) throw std::runtime_error(diags.format_all());
      const arch::HardwareModel hw(arch->spec);
      const std::string short_name = std::string_view(arch_file).find("tpu") != std::string::npos
                                         ? "tpu4"
                                         : "h100";
      for (const Layer& layer : all) {
        if (!only.empty() && layer.name.find(only) == std::string::npos &&
            short_name.find(only) == std::string::npos)
          continue;
        const mapper::Hierarchy h =
            restrict(mapper::make_hierarchy(hw, mapper::op_precision(layer.op)));
        std::string why;
        const auto space = mapper::MapSpace::create(layer.op.space, h, options_for(layer.op), why);
        if (!space) {
          std::printf("%-36s %-5s no map space: %s\n", layer.name.c_str(), short_name.c_str(),
                      why.c_str());
          continue;
        }
        if (sizes_only) {
          std::string radices;
          for (const std::uint64_t r : space->radices()) radices += fmt::format(" {}", r);
          std::printf("%-36s %-5s %10.3g  levels %zu radices%s\n", layer.name.c_str(),
                      short_name.c_str(), static_cast<double>(space->size()), h.levels.size(),
                      radices.c_str());
          continue;
        }
        std::uint64_t valid = 0;
        const Run exhaustive = timed([&] {
          auto out = mapper::search_exhaustive(*space, goal, {.max_evaluations = ~0ULL}, threads);
          valid = out.valid;
          return out;
        });
        // The budget: --budget, but at most a 40th of the points (at least 500).
        const std::uint64_t points = static_cast<std::uint64_t>(space->size());
        const std::uint64_t evaluations = std::min(budget, std::max<std::uint64_t>(500, points / 40));
        const auto stochastic = [&](mapper::Strategy s) {
          return timed([&] {
            const auto strategy = mapper::make_strategy(s, *space, 1, evaluations, temperatures);
            return mapper::run_search(*space, *strategy, goal, {.max_evaluations = evaluations});
          });
        };
        const Run heuristic = stochastic(mapper::Strategy::Heuristic);
        const Run annealing = stochastic(mapper::Strategy::Annealing);
        const auto gap = [&](const Run& r) {
          return r.found ? (r.score / exhaustive.score - 1) * 100 : 1e9;
        };
        worst_heuristic = std::max(worst_heuristic, gap(heuristic));
        worst_annealing = std::max(worst_annealing, gap(annealing));
        const auto ratio = [&](const Run& r) {
          return static_cast<double>(r.evaluated) / static_cast<double>(points);
        };
        std::printf(
            "%-36s %-5s %10.3g %10.3g %14.6g %7.2f | %7.2f %7llu %8.4f %6.2f | %7.2f %7llu %8.4f "
            "%6.2f\n",
            layer.name.c_str(), short_name.c_str(), static_cast<double>(space->size()),
            static_cast<double>(valid), exhaustive.score, exhaustive.seconds, gap(heuristic),
            static_cast<unsigned long long>(heuristic.evaluated), ratio(heuristic),
            heuristic.seconds, gap(annealing),
            static_cast<unsigned long long>(annealing.evaluated), ratio(annealing),
            annealing.seconds);
        std::fflush(stdout);
      }
    }
    std::printf("worst gap: heuristic %.2f%%, annealing %.2f%%\n", worst_heuristic,
                worst_annealing);
    if (!sizes_only) full_spaces(all, budget, only);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_mapper_quality: %s\n", e.what());
    return 1;
  }
  return 0;
}
