#include "reports/layer_table.h"

#include <gtest/gtest.h>

namespace coda::reports {
namespace {

results::RunResult two_op_run() {
  results::RunResult run;
  run.processing_elements = 4;
  for (const char* name : {"conv1", "fc, last"}) {
    results::OpResult op;
    op.name = name;
    op.mapping = {{"Sr", 8}, {"Sc", 2}, {"T", 3}, {"row_folds", 4}, {"col_folds", 1}, {"groups", 1}};
    op.cost = {Cycles{50}, Cycles{40}, Cycles{10}, 96, Bytes{100}, Bytes{16}, Bytes{30}, Bytes{16}};
    op.mapping_efficiency = 1.0;
    op.compute_utilization = 0.6;
    op.traffic = {{"ifmap", "sram", Bytes{60}, Bytes{}}, {"ofmap", "dram", Bytes{}, Bytes{16}}};
    run.ops.push_back(op);
    run.total = run.total + op.cost;
  }
  return run;
}

TEST(LayerTable, CsvHasOneRowPerOpWithExactValues) {
  const std::string csv = format_layers_csv(two_op_run());
  EXPECT_EQ(csv,
            "layer,Sr,Sc,T,row_folds,col_folds,groups,macs,compute_cycles,stall_cycles,cycles,"
            "compute_utilization,mapping_efficiency,bound,arithmetic_intensity,"
            "sram_ifmap_read_bytes,sram_ifmap_write_bytes,dram_ofmap_read_bytes,"
            "dram_ofmap_write_bytes,energy_joules\n"
            "conv1,8,2,3,4,1,1,96,40,10,50,0.600000,1.000000,compute,0.000000,60,0,0,16,0\n"
            "\"fc, last\",8,2,3,4,1,1,96,40,10,50,0.600000,1.000000,compute,0.000000,60,0,0,16,"
            "0\n");
}

TEST(LayerTable, MixedUnitsGetTheGeneralCsv) {
  results::RunResult run = two_op_run();
  run.clock = Hertz{1e9};
  run.ops[1].unit = results::OpUnit::Vector;
  run.ops[1].mapping = {{"elements", 64}, {"passes", 2}};
  run.ops[1].bound = results::Bound::Memory;
  run.ops[1].cost.energy = Joules{2.5e-9};
  const std::string csv = format_layers_csv(run);
  // 50 cycles at 1 GHz = 5e-08 s.
  EXPECT_EQ(csv,
            "layer,unit,mapping,macs,compute_cycles,stall_cycles,cycles,seconds,"
            "compute_utilization,mapping_efficiency,bound,arithmetic_intensity,chip_read_bytes,"
            "chip_write_bytes,dram_read_bytes,dram_write_bytes,energy_joules\n"
            "conv1,systolic,Sr=8;Sc=2;T=3;row_folds=4;col_folds=1;groups=1,96,40,10,50,5e-08,0.600000,"
            "1.000000,compute,0.000000,100,16,30,16,0\n"
            "\"fc, last\",vector,elements=64;passes=2,96,40,10,50,5e-08,0.600000,1.000000,"
            "memory,0.000000,100,16,30,16,2.5e-09\n");
  const std::string table = format_layer_table(run);
  EXPECT_NE(table.find("elements=64 passes=2"), std::string::npos) << table;
  EXPECT_NE(table.find("energy_uJ"), std::string::npos) << table;
}

TEST(LayerTable, TextTableHasHeaderRowsAndTotal) {
  const std::string table = format_layer_table(two_op_run());
  // Header, two ops, total.
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 4);
  EXPECT_NE(table.find("compute_cyc"), std::string::npos);
  // The total row sums the ops: 80 compute, 20 stall, 100 cycles; utilization
  // 192 MACs / (4 PEs * 80 cycles) = 60.00 %.
  const auto total = table.substr(table.rfind("total"));
  EXPECT_NE(total.find(" 80 "), std::string::npos) << total;
  EXPECT_NE(total.find(" 20 "), std::string::npos) << total;
  EXPECT_NE(total.find(" 100 "), std::string::npos) << total;
  EXPECT_NE(total.find("60.00"), std::string::npos) << total;
}

}  // namespace
}  // namespace coda::reports
