// RUN: usmp-opt %s --split-input-file -t 'c{prefix=net}' | filecheck %s
// RUN: usmp-opt %s --split-input-file -t 'c-header{prefix=net}' | filecheck %s --check-prefix=HEADER
// The interface of SPEC §7 for planned programs: U1 internal pools, U2/U3 external pools
// (workspace and constant), U4 inputs and outputs inside the workspace pool.

// U1: every pool internal.
pool.workspace @global_workspace {internal, size_bytes = 64 : i64}
pool.constant @global_constant {internal, size_bytes = 8 : i64, data = dense<[0, 0, -128, 63, 0, 0, 0, 64]> : tensor<8xi8>}
func.func @scale(%x: memref<2xf32>, %w: memref<2xf32>, %y: memref<2xf32>, %global_workspace: memref<64xi8> {pool.pool = @global_workspace}) {
  %c0 = arith.constant 0 : index
  %off = arith.constant 32 : index
  %scratch = memref.view %global_workspace[%off][] {usmp.buffer = "scratch"} : memref<64xi8> to memref<2xf32>
  %a = memref.load %x[%c0] : memref<2xf32>
  %b = memref.load %w[%c0] : memref<2xf32>
  %p = arith.mulf %a, %b : f32
  memref.store %p, %scratch[%c0] : memref<2xf32>
  %q = memref.load %scratch[%c0] : memref<2xf32>
  memref.store %q, %y[%c0] : memref<2xf32>
  func.return
}
func.func @main(%input: memref<2xf32>, %output: memref<2xf32>) {
  %global_workspace = pool.base @global_workspace : memref<64xi8>
  %global_constant = pool.base @global_constant : memref<8xi8>
  %w_off = arith.constant 0 : index
  %w = memref.view %global_constant[%w_off][] {usmp.buffer = "w"} : memref<8xi8> to memref<2xf32>
  %t_off = arith.constant 0 : index
  %t = memref.view %global_workspace[%t_off][] {usmp.buffer = "t"} : memref<64xi8> to memref<2xf32>
  func.call @scale(%input, %w, %t, %global_workspace) : (memref<2xf32>, memref<2xf32>, memref<2xf32>, memref<64xi8>) -> ()
  func.call @scale(%t, %w, %output, %global_workspace) : (memref<2xf32>, memref<2xf32>, memref<2xf32>, memref<64xi8>) -> ()
  func.return
}

// CHECK:      #include "net.h"
// CHECK:      /* pool @global_workspace: internal workspace pool, 64 bytes */
// CHECK-NEXT: static _Alignas(16) uint8_t global_workspace_pool[64];
// CHECK:      /* pool @global_constant: internal constant pool, 8 bytes */
// CHECK-NEXT: static const _Alignas(16) uint8_t global_constant_pool[8] = {
// CHECK-NEXT:   0, 0, 128, 63, 0, 0, 0, 64
// CHECK-NEXT: };
// CHECK:      static void scale(const float* x, const float* w, float* y, uint8_t* global_workspace);
// CHECK-LABEL: static void scale(const float* x, const float* w, float* y, uint8_t* global_workspace) {
// CHECK-NEXT:    // buffer scratch: pool global_workspace, offset 32, 8 bytes
// CHECK-NEXT:    float* scratch = (float*)(void*)(global_workspace + 32);
// CHECK-LABEL: int32_t net_run(struct net_inputs* inputs, struct net_outputs* outputs) {
// CHECK-NEXT:    const float* input = (const float*)inputs->input;
// CHECK-NEXT:    float* output = (float*)outputs->output;
// CHECK-NEXT:    uint8_t* global_workspace = global_workspace_pool;
// CHECK-NEXT:    const uint8_t* global_constant = global_constant_pool;
// CHECK-NEXT:    // buffer w: pool global_constant, offset 0, 8 bytes
// CHECK-NEXT:    const float* w = (const float*)(const void*)global_constant;
// CHECK-NEXT:    // buffer t: pool global_workspace, offset 0, 8 bytes
// CHECK-NEXT:    float* t = (float*)(void*)global_workspace;
// CHECK-NEXT:    scale(input, w, t, global_workspace);
// CHECK-NEXT:    scale(t, w, output, global_workspace);
// CHECK-NEXT:    return 0;
// CHECK-NEXT:  }

// HEADER:      #ifndef NET_H_
// HEADER-NEXT: #define NET_H_
// HEADER:      #include <stdint.h>
// HEADER:      #ifdef __cplusplus
// HEADER-NEXT: extern "C" {
// HEADER-NEXT: #endif
// HEADER-NOT:  POOL_SIZE
// HEADER:      struct net_inputs {
// HEADER-NEXT:   void* input;
// HEADER-NEXT: };
// HEADER:      struct net_outputs {
// HEADER-NEXT:   void* output;
// HEADER-NEXT: };
// HEADER-NOT:  struct net_workspace_pools
// HEADER:      int32_t net_run(struct net_inputs* inputs, struct net_outputs* outputs);
// HEADER:      #endif /* NET_H_ */

// -----

// U2/U3: an external workspace pool, an internal one and an external constant pool.
pool.workspace @sram {size_bytes = 16 : i64}
pool.workspace @dram {internal, size_bytes = 32 : i64}
pool.constant @flash {size_bytes = 4 : i64, data = dense<[1, 2, -1, 127]> : tensor<4xi8>}
func.func @main(%x: memref<4xi8>, %y: memref<4xi8>) {
  %sram = pool.base @sram : memref<16xi8>
  %dram = pool.base @dram : memref<32xi8>
  %flash = pool.base @flash : memref<4xi8>
  %c0 = arith.constant 0 : index
  %a = memref.view %sram[%c0][] {usmp.buffer = "a"} : memref<16xi8> to memref<4xi8>
  %b = memref.view %dram[%c0][] {usmp.buffer = "b"} : memref<32xi8> to memref<4xi8>
  %k = memref.view %flash[%c0][] {usmp.buffer = "k"} : memref<4xi8> to memref<4xi8>
  "memref.copy"(%x, %a) : (memref<4xi8>, memref<4xi8>) -> ()
  "memref.copy"(%k, %b) : (memref<4xi8>, memref<4xi8>) -> ()
  "memref.copy"(%b, %y) : (memref<4xi8>, memref<4xi8>) -> ()
  func.return
}

// CHECK:       static _Alignas(16) uint8_t dram_pool[32];
// CHECK-NOT:   sram_pool
// CHECK-NOT:   flash_pool
// CHECK-LABEL: int32_t net_run(struct net_inputs* inputs, struct net_outputs* outputs, struct net_workspace_pools* workspace_pools) {
// CHECK:         uint8_t* sram = (uint8_t*)workspace_pools->sram;
// CHECK-NEXT:    uint8_t* dram = dram_pool;
// CHECK-NEXT:    const uint8_t* flash = (const uint8_t*)workspace_pools->flash;

// HEADER:      #define NET_SRAM_WORKSPACE_POOL_SIZE 16
// HEADER-NEXT: #define NET_FLASH_CONSTANT_POOL_SIZE 4
// HEADER-NEXT: #define NET_FLASH_CONSTANT_POOL_DATA \
// HEADER-NEXT:     1, 2, 255, 127
// HEADER-NOT:  NET_DRAM
// HEADER:      struct net_workspace_pools {
// HEADER-NEXT:   void* sram;
// HEADER-NEXT:   void* flash;
// HEADER-NEXT: };
// HEADER:      int32_t net_run(struct net_inputs* inputs, struct net_outputs* outputs, struct net_workspace_pools* workspace_pools);

// -----

// U4: inputs and outputs live in the workspace pool; the entry function takes no memrefs.
builtin.module attributes {usmp.io_allocations = [{name = "x", kind = "input", pool = @sram, offset = 0 : i64, type = memref<4xf32>}, {name = "y", kind = "output", pool = @sram, offset = 16 : i64, type = memref<4xf32>}]} {
  pool.workspace @sram {size_bytes = 32 : i64}
  func.func @main() {
    %sram = pool.base @sram : memref<32xi8>
    %x_off = arith.constant 0 : index
    %x = memref.view %sram[%x_off][] {usmp.buffer = "x"} : memref<32xi8> to memref<4xf32>
    %y_off = arith.constant 16 : index
    %y = memref.view %sram[%y_off][] {usmp.buffer = "y"} : memref<32xi8> to memref<4xf32>
    "memref.copy"(%x, %y) : (memref<4xf32>, memref<4xf32>) -> ()
    func.return
  }
}

// CHECK-LABEL: int32_t net_run(struct net_workspace_pools* workspace_pools) {
// CHECK-NEXT:    uint8_t* sram = (uint8_t*)workspace_pools->sram;
// CHECK:         memmove(y, x, 4 * sizeof(float));
// CHECK-NEXT:    return 0;
// CHECK-NEXT:  }
// CHECK-LABEL: struct net_inputs net_map_inputs(struct net_workspace_pools* workspace_pools) {
// CHECK-NEXT:    struct net_inputs inputs;
// CHECK-NEXT:    inputs.x = (uint8_t*)workspace_pools->sram + 0;
// CHECK-NEXT:    return inputs;
// CHECK-NEXT:  }
// CHECK-LABEL: struct net_outputs net_map_outputs(struct net_workspace_pools* workspace_pools) {
// CHECK-NEXT:    struct net_outputs outputs;
// CHECK-NEXT:    outputs.y = (uint8_t*)workspace_pools->sram + 16;

// HEADER:      #define NET_SRAM_WORKSPACE_POOL_SIZE 32
// HEADER:      struct net_inputs {
// HEADER-NEXT:   void* x;
// HEADER:      struct net_outputs {
// HEADER-NEXT:   void* y;
// HEADER:      struct net_inputs net_map_inputs(struct net_workspace_pools* workspace_pools);
// HEADER-NEXT: struct net_outputs net_map_outputs(struct net_workspace_pools* workspace_pools);
// HEADER:      int32_t net_run(struct net_workspace_pools* workspace_pools);
