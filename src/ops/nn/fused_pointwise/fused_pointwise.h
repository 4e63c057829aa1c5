// com.kilnrt:FusedPointwise — a chain (DAG) of pointwise ops evaluated as one node, made by passes/fuse_pointwise.
// The node carries a small register program:
//   registers 0 .. N-1        the node's inputs (numpy-broadcast to the output shape; float32 / float16 / bfloat16,
//                             or bool where an instruction reads a condition)
//   register  N + k           the result of instruction k; the last instruction's result is the output
// Attributes: `program` (ints, 4 per instruction: opcode, operand a, b, c; -1 = unused) and `params` (floats, 2 per
// instruction: the op's constants — LeakyRelu alpha, Clip min/max, a scalar exponent, an immediate value ...).
// Math is float32 throughout (16-bit values are widened on load); Cast rounds to its target type. The CPU reference
// below is the semantics the CUDA layer (cuda/fused_pointwise_layer.cc, NVRTC code) must reproduce.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kilnrt/tensor.h"

namespace kilnrt::ops::nn {

constexpr const char* kFusedPointwiseOp = "FusedPointwise";

// Opcodes: stable numbers (stored in engine files and shared with the CUDA code generator).
enum PwOpcode : int {
  kPwConst = 1,  // p0 (no operand)
  // unary (operand a)
  kPwNeg = 10,
  kPwAbs,
  kPwExp,
  kPwLog,
  kPwSqrt,
  kPwReciprocal,
  kPwSigmoid,
  kPwTanh,
  kPwErf,
  kPwRelu,
  kPwFloor,
  kPwCeil,
  kPwSin,
  kPwCos,
  kPwSoftplus,
  kPwSoftsign,
  kPwHardSwish,
  kPwIdentity,
  kPwMish,
  // unary with parameters
  kPwLeakyRelu = 40,   // alpha = p0
  kPwElu,              // alpha = p0
  kPwHardSigmoid,      // clamp(p0 * x + p1, 0, 1)
  kPwClip,             // clamp(x, p0, p1)
  kPwPowScalar,        // x ^ p0
  kPwSelu,             // alpha = p0, gamma = p1
  kPwCelu,             // alpha = p0
  kPwThresholdedRelu,  // alpha = p0
  kPwGelu,             // p0 = 0: erf form, 1: tanh form
  kPwCast,             // rounds to p0's type: 0 float32, 1 float16, 2 bfloat16
  // binary (operands a, b)
  kPwAdd = 70,
  kPwSub,
  kPwMul,
  kPwDiv,
  kPwPow,
  kPwMax,
  kPwMin,
  kPwPRelu,
  // ternary: a ? b : c (a a bool register)
  kPwWhere = 90,
};

struct PwInstr {
  int op = 0;
  int a = -1, b = -1, c = -1;
  float p0 = 0.f, p1 = 0.f;
};

struct PwProgram {
  int num_inputs = 0;
  std::vector<PwInstr> code;
};

// Operand count of an opcode (0..3); -1 for an unknown opcode.
int pointwise_arity(int op);
// "Mul", "Sigmoid", "Const" ... (for descriptions and errors).
const char* pointwise_op_name(int op);
// Reads and validates a FusedPointwise node's program (operands in range and defined before use, known opcodes,
// N = the node's input count); throws kInvalidModel naming the node.
PwProgram read_pointwise_program(const ir::Node& node);
// Stores `p` in `node`'s attributes (program, params).
void write_pointwise_program(const PwProgram& p, ir::Node* node);
// The dtype of every register given the inputs' dtypes (Cast changes it, Where takes its value operands').
// Throws kInvalidModel naming the node for a non-float value operand or a non-bool condition.
std::vector<DType> pointwise_register_dtypes(const PwProgram& p, const std::vector<DType>& inputs,
                                             const ir::Node& node);
// One instruction on float32 values (the reference semantics; a/b/c are the operand values, bool as 0 / 1).
float pointwise_apply(const PwInstr& in, float a, float b, float c);
// "mul+add" (the ops in program order, lower case), for tactics and logs.
std::string describe_pointwise(const PwProgram& p);

}  // namespace kilnrt::ops::nn
