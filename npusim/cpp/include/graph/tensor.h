/* npusim's stand-in for GE's "graph/tensor.h" as the Ascend C tiling headers use it: ge::Shape
 * (AscendC::TensorShape), the dimensions of a tensor. */
#ifndef NPUSIM_GRAPH_TENSOR_H
#define NPUSIM_GRAPH_TENSOR_H
#include <cstddef>
#include <cstdint>
#include <vector>
#include "graph/types.h"
namespace ge {
class Shape {
public:
    Shape() = default;
    explicit Shape(const std::vector<int64_t>& dims) : dims_(dims) {}
    std::vector<int64_t> GetDims() const { return dims_; }
    size_t GetDimNum() const { return dims_.size(); }
    int64_t GetDim(size_t i) const { return i < dims_.size() ? dims_[i] : 0; }
    int64_t GetShapeSize() const
    {
        int64_t n = 1;
        for (int64_t d : dims_) {
            n *= d;
        }
        return n;
    }
private:
    std::vector<int64_t> dims_;
};
}  // namespace ge
#endif
