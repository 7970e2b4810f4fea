// RUN: usmp-opt %s -p convert-linalg-to-loops,usmp -t c | filecheck %s
// RUN: usmp-opt %s -p convert-linalg-to-loops,usmp -t c-header | filecheck %s --check-prefix=HEADER
// RUN: usmp-opt %s -p convert-linalg-to-loops,usmp --workspace-pools=sram -t c | filecheck %s --check-prefix=U2
// From allocations to C in one command: linalg lowered to loops, buffers planned (U1: internal
// default pools), pools passed only to the operators that use them.

func.func @relu(%a: memref<8xf32>, %o: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : memref<8xf32>) outs(%o : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %in, %z : f32
    linalg.yield %m : f32
  }
  func.return
}
func.func @scale(%a: memref<8xf32>, %w: memref<8xf32>, %o: memref<8xf32>) {
  %tmp = usmp.allocate : memref<8xf32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %w : memref<8xf32>, memref<8xf32>) outs(%tmp : memref<8xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %p = arith.mulf %x, %y : f32
    linalg.yield %p : f32
  }
  func.call @relu(%tmp, %o) : (memref<8xf32>, memref<8xf32>) -> ()
  func.return
}
func.func @main(%input: memref<8xf32>, %output: memref<8xf32>) {
  %w = usmp.allocate_const dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : memref<8xf32>
  %t = usmp.allocate : memref<8xf32>
  func.call @scale(%input, %w, %t) : (memref<8xf32>, memref<8xf32>, memref<8xf32>) -> ()
  func.call @relu(%t, %output) : (memref<8xf32>, memref<8xf32>) -> ()
  func.return
}

// CHECK:       static _Alignas(16) uint8_t global_workspace_pool[{{[0-9]+}}];
// CHECK:       static const _Alignas(16) uint8_t global_constant_pool[32] = {
// CHECK-NEXT:    0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64,
// CHECK-NEXT:    0, 0, 160, 64, 0, 0, 192, 64, 0, 0, 224, 64, 0, 0, 0, 65
// CHECK-NEXT:  };
// CHECK:       static void relu(const float* a, float* o);
// CHECK-NEXT:  static void scale(const float* a, const float* w, float* o, uint8_t* global_workspace);
// CHECK-LABEL: static void scale(const float* a, const float* w, float* o, uint8_t* global_workspace) {
// CHECK-NEXT:    // buffer tmp: pool global_workspace, offset {{[0-9]+}}, 32 bytes
// CHECK-NEXT:    float* tmp = (float*){{.*}}global_workspace{{.*}};
// CHECK-LABEL: int32_t usmp_default_run(struct usmp_default_inputs* inputs, struct usmp_default_outputs* outputs) {
// CHECK-NEXT:    const float* input = (const float*)inputs->input;
// CHECK-NEXT:    float* output = (float*)outputs->output;
// CHECK-NEXT:    uint8_t* global_workspace = global_workspace_pool;
// CHECK-NEXT:    const uint8_t* global_constant = global_constant_pool;
// CHECK-NEXT:    // buffer w: pool global_constant, offset 0, 32 bytes
// CHECK-NEXT:    const float* w = (const float*)(const void*)global_constant;
// CHECK-NEXT:    // buffer t: pool global_workspace, offset {{[0-9]+}}, 32 bytes
// CHECK:         scale(input, w, t, global_workspace);
// CHECK-NEXT:    relu(t, output);
// CHECK-NEXT:    return 0;

// HEADER:      int32_t usmp_default_run(struct usmp_default_inputs* inputs, struct usmp_default_outputs* outputs);

// U2-NOT:      global_workspace_pool
// U2:          static const _Alignas(16) uint8_t global_constant_pool[32] = {
// U2-LABEL:    int32_t usmp_default_run(struct usmp_default_inputs* inputs, struct usmp_default_outputs* outputs, struct usmp_default_workspace_pools* workspace_pools) {
// U2:            uint8_t* sram = (uint8_t*)workspace_pools->sram;
