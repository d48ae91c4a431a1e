#pragma once
// Element types live in core/ (arch/ prices them too); the workload IR names them here.

#include "core/data_type.h"

namespace coda::workload {

using coda::bit_width;
using coda::data_type_names;
using coda::DataType;
using coda::parse_data_type;
using coda::to_string;

}  // namespace coda::workload
