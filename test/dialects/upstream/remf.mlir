// Upstream's `arith.remf` (xDSL's arith lacks it; FLOOR_MOD's kernel uses it) parses and prints
// back in upstream's form, which mlir-opt-22 reads.
// RUN: usmp-opt %s | filecheck %s
// RUN: usmp-opt %s | usmp-opt | filecheck %s
// RUN: usmp-opt %s --print-op-generic | usmp-opt | filecheck %s

// CHECK: %{{.*}} = arith.remf %a, %b : f32
func.func @f(%a: f32, %b: f32) -> f32 {
  %0 = arith.remf %a, %b : f32
  func.return %0 : f32
}
