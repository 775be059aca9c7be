/* npusim's stand-in for GE's "graph/types.h" (CANN's graph engine, not in asc-devkit), which
 * the Ascend C tiling headers include for the type ge::DataType (AscendC::TensorDataType).
 * Its enumerators are not declared: the kernel headers' CPU-debug build defines DT_FLOAT...
 * as macros (kernel_type.h), and no tiling header names them. */
#ifndef NPUSIM_GRAPH_TYPES_H
#define NPUSIM_GRAPH_TYPES_H
#include <cstdint>
namespace ge {
enum DataType : int32_t {};
}  // namespace ge
#endif
