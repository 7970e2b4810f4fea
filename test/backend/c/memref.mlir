// RUN: usmp-opt %s -t c | filecheck %s
// RUN: %if gcc %{ rm -rf %t && mkdir -p %t && usmp-opt %s -t c-header -o %t/usmp_default.h && usmp-opt %s -t c -o %t/model.c && gcc -std=c11 -Wall -Wextra -Werror -c %t/model.c -o %t/model.o %}
// Memref values are pointers to their element (0, ..., 0); strides come from the static types.

"memref.global"() <{sym_name = "lut", sym_visibility = "private", type = memref<4xi16>, initial_value = dense<[1, -2, 300, -32768]> : tensor<4xi16>, constant}> : () -> ()
"memref.global"() <{sym_name = "counter", sym_visibility = "private", type = memref<1xi32>, initial_value = dense<0> : tensor<1xi32>}> : () -> ()

// CHECK:      static const int16_t lut[4] = {
// CHECK-NEXT:   1, (-2), 300, (-32768)
// CHECK-NEXT: };
// CHECK:      static int32_t counter[1] = {
// CHECK-NEXT:   0
// CHECK-NEXT: };

func.func @views(%a: memref<4x8xf32>, %o: memref<2x4xf32>, %k: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %s = memref.subview %a[1, 2] [2, 4] [1, 1] : memref<4x8xf32> to memref<2x4xf32, strided<[8, 1], offset: 10>>
  %v = memref.load %s[%c1, %c1] : memref<2x4xf32, strided<[8, 1], offset: 10>>
  memref.store %v, %o[%c0, %c0] : memref<2x4xf32>
  %d = memref.subview %a[%k, 0] [1, 8] [1, 2] : memref<4x8xf32> to memref<8xf32, strided<[2], offset: ?>>
  %w = memref.load %d[%c1] : memref<8xf32, strided<[2], offset: ?>>
  memref.store %w, %o[%c0, %c1] : memref<2x4xf32>
  %flat = memref.collapse_shape %a [[0, 1]] : memref<4x8xf32> into memref<32xf32>
  %x = memref.load %flat[%k] : memref<32xf32>
  memref.store %x, %o[%c1, %c0] : memref<2x4xf32>
  %r = memref.reinterpret_cast %a to offset: [3], sizes: [2, 2], strides: [8, 1] : memref<4x8xf32> to memref<2x2xf32, strided<[8, 1], offset: 3>>
  %y = memref.load %r[%c1, %c1] : memref<2x2xf32, strided<[8, 1], offset: 3>>
  memref.store %y, %o[%c1, %c1] : memref<2x4xf32>
  %sub = memref.subview %o[0, 2] [2, 2] [1, 1] : memref<2x4xf32> to memref<2x2xf32, strided<[4, 1], offset: 2>>
  "memref.copy"(%r, %sub) : (memref<2x2xf32, strided<[8, 1], offset: 3>>, memref<2x2xf32, strided<[4, 1], offset: 2>>) -> ()
  // Equally spaced runs at a dynamic offset (int8 convolutions' window rows): a pointer.
  %runs = memref.reinterpret_cast %flat to offset: [%k], sizes: [2, 3], strides: [5, 1] : memref<32xf32> to memref<2x3xf32, strided<[5, 1], offset: ?>>
  %z = memref.load %runs[%c1, %c1] : memref<2x3xf32, strided<[5, 1], offset: ?>>
  memref.store %z, %o[%c0, %c2] : memref<2x4xf32>
  func.return
}

// CHECK-LABEL: static void views(const float* a, float* o, int64_t k) {
// CHECK-NEXT:    const float* s = a + 10;
// CHECK-NEXT:    float v = s[9];
// CHECK-NEXT:    o[0] = v;
// CHECK-NEXT:    const float* d = a + k * 8;
// CHECK-NEXT:    float w = d[2];
// CHECK-NEXT:    o[1] = w;
// CHECK-NEXT:    const float* flat = a;
// CHECK-NEXT:    float x = flat[k];
// CHECK-NEXT:    o[4] = x;
// CHECK-NEXT:    const float* r = a + 3;
// CHECK-NEXT:    float y = r[9];
// CHECK-NEXT:    o[5] = y;
// CHECK-NEXT:    float* sub = o + 2;
// CHECK-NEXT:    for (int64_t copy_i0 = 0; copy_i0 < 2; copy_i0 += 1) {
// CHECK-NEXT:      for (int64_t copy_i1 = 0; copy_i1 < 2; copy_i1 += 1) {
// CHECK-NEXT:        sub[copy_i0 * 4 + copy_i1] = r[copy_i0 * 8 + copy_i1];
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    const float* runs = flat + k;
// CHECK-NEXT:    float z = runs[6];
// CHECK-NEXT:    o[2] = z;
// CHECK-NEXT:  }

func.func @main(%a: memref<4x8xf32>, %o: memref<2x4xf32>, %t: memref<4xi16>) {
  %k = arith.constant 1 : index
  func.call @views(%a, %o, %k) : (memref<4x8xf32>, memref<2x4xf32>, index) -> ()
  %g = memref.get_global @lut : memref<4xi16>
  "memref.copy"(%g, %t) : (memref<4xi16>, memref<4xi16>) -> ()
  %cnt = memref.get_global @counter : memref<1xi32>
  %c0 = arith.constant 0 : index
  %n = memref.load %cnt[%c0] : memref<1xi32>
  %one = arith.constant 1 : i32
  %n1 = arith.addi %n, %one : i32
  memref.store %n1, %cnt[%c0] : memref<1xi32>
  func.return
}

// CHECK-LABEL: int32_t usmp_default_run(
// CHECK:         views(a, o, 1);
// CHECK-NEXT:    const int16_t* g = (const int16_t*)lut;
// CHECK-NEXT:    memmove(t, g, 4 * sizeof(int16_t));
// CHECK-NEXT:    int32_t* cnt = (int32_t*)counter;
