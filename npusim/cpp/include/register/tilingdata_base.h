/* npusim's stand-in for CANN's "register/tilingdata_base.h": the host side of a tiling
 * structure (BEGIN_TILING_DATA_DEF ... END_TILING_DATA_DEF), whose kernel side is the plain
 * struct kernel_tiling/kernel_tiling.h declares with the same fields in the same order under
 * #pragma pack(8). Here each definition is a class holding those fields as members in that
 * order (TilingDef has no data; #pragma pack(8) changes nothing for fields of at most 8 B), so its bytes are the kernel struct's:
 * set_<field>/get_<field>, GetDataSize() and SaveToBuffer() copy them as they are. Operator
 * registration (REGISTER_TILING_DATA_CLASS) has no meaning on npusim and expands to nothing. */
#ifndef NPUSIM_REGISTER_TILINGDATA_BASE_H
#define NPUSIM_REGISTER_TILINGDATA_BASE_H
#include <cstddef>
/* securec: host code built against CANN calls memcpy_s with only the CANN headers
 * included (asc-devkit matmul_fused copies its tiling with it), so one of them brings
 * securec.h; the tiling host code needs it too. */
#include "securec.h"
#include <cstdint>
#include <cstring>
#include <map>       /* the tiling headers use these without including them */
#include <memory>
#include <string>
#include <vector>

namespace optiling {
class TilingDef {};
}  // namespace optiling

#define BEGIN_TILING_DATA_DEF(class_name)                                                   \
    class class_name : public optiling::TilingDef {               \
    public:                                                                                 \
        size_t GetDataSize() const { return sizeof(*this); }                               \
        const char* GetTilingClassName() const { return #class_name; }                     \
        void SetDataPtr(void*) {}                                                           \
        void SaveToBuffer(void* dst, size_t capacity) const                                \
        {                                                                                   \
            std::memcpy(dst, this, capacity < sizeof(*this) ? capacity : sizeof(*this));  \
        }

#define TILING_DATA_FIELD_DEF(type, name)                                                   \
    type name = 0;                                                                          \
    void set_##name(type value) { name = value; }                                           \
    type get_##name() const { return name; }

#define TILING_DATA_FIELD_DEF_ARR(type, count, name)                                        \
    type name[count] = {};                                                                  \
    void set_##name(const type* value) { std::memcpy(name, value, sizeof(name)); }          \
    type* get_##name() { return name; }

#define TILING_DATA_FIELD_DEF_STRUCT(type, name) type name;

#define END_TILING_DATA_DEF }

#define REGISTER_TILING_DATA_CLASS(op_type, class_name)
#endif
