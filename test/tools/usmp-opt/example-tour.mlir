// examples/tour.mlir (the README's IR tour) plans and prints: the scratch and the tensor share
// @sram, the weights go to the external constant pool @flash, the unused @dram stays empty.

// RUN: usmp-opt %S/../../../examples/tour.mlir -p 'convert-linalg-to-loops,usmp' -t c | filecheck %s

// CHECK-LABEL: static void dense(const int8_t* in, const int8_t* w, int8_t* out, uint8_t* sram) {
// CHECK-NEXT:    // buffer acc: pool sram, offset 0, 64 bytes
// CHECK-LABEL: int32_t usmp_default_run(struct usmp_default_inputs* inputs, struct usmp_default_outputs* outputs, struct usmp_default_workspace_pools* workspace_pools) {
// CHECK:         // buffer t: pool sram, offset 64, 16 bytes
// CHECK:         // buffer w: pool flash, offset 0, 256 bytes
// CHECK:         dense(x, w, t, sram);
// CHECK-NEXT:    relu(t, y);
// CHECK-NOT:     dram
