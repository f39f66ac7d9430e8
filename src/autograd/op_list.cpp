// The registry of differentiable ops: the node names their rules record. The rule tests check
// that each appears in a graph that passed gradcheck (tests/autograd/coverage_test.cpp), and
// sanitizer builds check that no op records a node missing here.

#include <sstream>
#include <string>
#include <vector>

#include "oxmera/autograd.h"

namespace ox::autograd {

namespace {

// Sorted, separated by white space.
constexpr const char* kDifferentiableOps = R"(
AbsBackward AcosBackward AdaptiveAvgPool2dBackward AdaptiveAvgPool2dBackwardBackward AddBackward
AddmmBackward AmaxBackward AminBackward AsStridedBackward AsinBackward Atan2Backward AtanBackward
AvgPool2dBackward AvgPool2dBackwardBackward BaddbmmBackward BmmBackward CatBackward CeilBackward
ClampBackward CloneBackward Conv1dBackward Conv2dBackward Conv2dInputGradBackward
Conv2dWeightGradBackward ConvTranspose2dBackward CopyBackward CopySlicesBackward CosBackward
CoshBackward CrossEntropyBackward CummaxBackward CumminBackward CumprodBackward CumsumBackward
DiagonalBackward DivBackward DotBackward EinsumBackward EluBackward EmbeddingBackward ErfBackward
ErfcBackward Exp2Backward ExpBackward ExpandBackward Expm1Backward FlipBackward FloorBackward
FloorDivideBackward FmodBackward GatherBackward GeluBackward GeluBackwardBackward HypotBackward
IndexAddBackward IndexBackward IndexPutBackward IndexSelectBackward KthvalueBackward
LayerNormBackward LeakyReluBackward LinalgCholeskyBackward LinalgDetBackward LinalgEighBackward
LinalgEigvalshBackward LinalgInvBackward LinalgLuFactorBackward LinalgLuSolveBackward
LinalgPinvBackward LinalgQrBackward LinalgSlogdetBackward LinalgSolveBackward
LinalgSolveTriangularBackward LinalgSvdBackward LinalgSvdvalsBackward Log10Backward Log1pBackward
Log2Backward LogBackward LogSoftmaxBackward LogaddexpBackward LogsigmoidBackward LogsumexpBackward
MaskedFillBackward MatmulBackward MaxBackward MaxPool2dBackward MaxPool2dBackwardBackward
MaximumBackward MeanBackward MedianBackward MinBackward MinimumBackward MishBackward MmBackward
MulBackward MvBackward NanToNumBackward NarrowBackward NegBackward NormBackward PermuteBackward
PowBackward ProdBackward ReciprocalBackward ReluBackward ReluBackwardBackward RemainderBackward
ReshapeBackward RmsNormBackward RoundBackward RsqrtBackward ScatterAddBackward ScatterBackward
ScatterReduceBackward SelectBackward SigmoidBackward SignBackward SiluBackward SinBackward
SinhBackward SliceBackward SoftmaxBackward SoftplusBackward SortBackward SqrtBackward SquareBackward
SqueezeBackward StdBackward SubBackward SumBackward TakeBackward TanBackward TanhBackward
TensordotBackward ToCopyBackward TopkBackward TransposeBackward TruncBackward UnfoldBackward
UnsqueezeBackward VarBackward ViewBackward WhereBackward
)";

}  // namespace

const std::vector<std::string>& differentiable_ops() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> names;
    std::istringstream words(kDifferentiableOps);
    for (std::string name; words >> name;) names.push_back(name);
    return names;
  }();
  return ops;
}

}  // namespace ox::autograd
