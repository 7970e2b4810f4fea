// RUN: usmp-opt %s -t c | filecheck %s
// RUN: %if gcc %{ rm -rf %t && mkdir -p %t && usmp-opt %s -t c-header -o %t/usmp_default.h && usmp-opt %s -t c -o %t/model.c && gcc -std=c11 -Wall -Wextra -Werror -c %t/model.c -o %t/model.o %}
// Integers are signless in MLIR: each op picks C's signed or unsigned view, and wrap-around
// arithmetic goes through unsigned types (no signed-overflow UB).

func.func @integers(%a: i32, %b: i32, %c: i8, %flag: i1) -> i32 {
  %add = arith.addi %a, %b : i32
  %mul = arith.muli %c, %c : i8
  %divs = arith.divsi %a, %b : i32
  %divu = arith.divui %a, %b : i32
  %remu = arith.remui %a, %b : i32
  %shl = arith.shli %a, %b : i32
  %shru = arith.shrui %a, %b : i32
  %shrs = arith.shrsi %a, %b : i32
  %ult = arith.cmpi ult, %a, %b : i32
  %sge = arith.cmpi sge, %a, %b : i32
  %maxu = arith.maxui %a, %b : i32
  %sel = arith.select %ult, %maxu, %add : i32
  %ext = arith.extsi %flag : i1 to i32
  %zext = arith.extui %c : i8 to i32
  %tr = arith.trunci %a : i32 to i8
  %big = arith.constant 5000000000 : i64
  %wide = arith.extsi %a : i32 to i64
  %sum64 = arith.addi %wide, %big : i64
  %idx = arith.index_cast %a : i32 to index
  %back = arith.index_cast %idx : index to i32
  %r0 = arith.xori %sel, %ext : i32
  %r1 = arith.ori %r0, %zext : i32
  %r2 = arith.andi %r1, %divs : i32
  %r3 = arith.addi %r2, %divu : i32
  %r4 = arith.addi %r3, %remu : i32
  %r5 = arith.addi %r4, %shl : i32
  %r6 = arith.addi %r5, %shru : i32
  %r7 = arith.addi %r6, %shrs : i32
  %sge32 = arith.extui %sge : i1 to i32
  %r8 = arith.addi %r7, %sge32 : i32
  %tr32 = arith.extsi %tr : i8 to i32
  %mul32 = arith.extsi %mul : i8 to i32
  %r9 = arith.addi %r8, %tr32 : i32
  %r10 = arith.addi %r9, %mul32 : i32
  %t64 = arith.trunci %sum64 : i64 to i32
  %r11 = arith.addi %r10, %t64 : i32
  %r12 = arith.addi %r11, %back : i32
  func.return %r12 : i32
}

// CHECK-LABEL: static int32_t integers(int32_t a, int32_t b, int8_t c, uint8_t flag) {
// CHECK-NEXT:    int32_t add = (int32_t)((uint32_t)a + (uint32_t)b);
// CHECK-NEXT:    int8_t mul = (int8_t)((uint32_t)c * (uint32_t)c);
// CHECK-NEXT:    int32_t divs = (int32_t)(a / b);
// CHECK-NEXT:    int32_t divu = (int32_t)((uint32_t)a / (uint32_t)b);
// CHECK-NEXT:    int32_t remu = (int32_t)((uint32_t)a % (uint32_t)b);
// CHECK-NEXT:    int32_t shl = (int32_t)((uint32_t)a << (uint32_t)b);
// CHECK-NEXT:    int32_t shru = (int32_t)((uint32_t)a >> (uint32_t)b);
// CHECK-NEXT:    int32_t shrs = (int32_t)(a >> (uint32_t)b);
// CHECK-NEXT:    uint8_t ult = (uint32_t)a < (uint32_t)b;
// CHECK-NEXT:    uint8_t sge = a >= b;
// CHECK-NEXT:    int32_t maxu = (uint32_t)a > (uint32_t)b ? a : b;
// CHECK-NEXT:    int32_t sel = ult ? maxu : add;
// CHECK-NEXT:    int32_t ext = (int32_t)(-(int32_t)flag);
// CHECK-NEXT:    int32_t zext = (int32_t)(uint8_t)c;
// CHECK-NEXT:    int8_t tr = (int8_t)a;
// CHECK-NEXT:    int64_t wide = (int64_t)a;
// CHECK-NEXT:    int64_t sum64 = (int64_t)((uint64_t)wide + (uint64_t)INT64_C(5000000000));
// CHECK-NEXT:    int64_t idx = (int64_t)a;
// CHECK-NEXT:    int32_t back = (int32_t)idx;
// CHECK:         return r12;
// CHECK-NEXT:  }

func.func @floats(%x: f32, %y: f64) -> f32 {
  %one = arith.constant 1.0 : f32
  %nan = arith.constant 0x7FC00000 : f32
  %uno = arith.cmpf uno, %x, %nan : f32
  %ult = arith.cmpf ult, %x, %one : f32
  %one_ = arith.cmpf one, %x, %one : f32
  %e = math.exp %x : f32
  %t = math.tanh %y : f64
  %r = math.rsqrt %x : f32
  %f = math.fma %x, %e, %r : f32
  %mn = arith.minimumf %f, %x : f32
  %mx = arith.maxnumf %mn, %one : f32
  %ext = arith.extf %mx : f32 to f64
  %sum = arith.addf %ext, %t : f64
  %tr = arith.truncf %sum : f64 to f32
  %i = arith.fptosi %tr : f32 to i32
  %u = arith.fptoui %tr : f32 to i8
  %fi = arith.sitofp %i : i32 to f32
  %fu = arith.uitofp %u : i8 to f32
  %bits = arith.bitcast %fu : f32 to i32
  %back = arith.bitcast %bits : i32 to f32
  %s0 = arith.select %uno, %fi, %back : f32
  %s1 = arith.select %ult, %s0, %one : f32
  %s2 = arith.select %one_, %s1, %one : f32
  %neg = arith.negf %s2 : f32
  func.return %neg : f32
}

// CHECK-LABEL: static float floats(float x, double y) {
// CHECK-NEXT:    uint8_t uno = (isnan(x) || isnan(NAN));
// CHECK-NEXT:    uint8_t ult = !(x >= 1.0f);
// CHECK-NEXT:    uint8_t one_ = (x < 1.0f || x > 1.0f);
// CHECK-NEXT:    float e = expf(x);
// CHECK-NEXT:    double t = tanh(y);
// CHECK-NEXT:    float r = 1.0f / sqrtf(x);
// CHECK-NEXT:    float f = fmaf(x, e, r);
// CHECK-NEXT:    float mn = usmp_minimumf(f, x);
// CHECK-NEXT:    float mx = fmaxf(mn, 1.0f);
// CHECK-NEXT:    double ext = (double)mx;
// CHECK-NEXT:    double sum = ext + t;
// CHECK-NEXT:    float tr = (float)sum;
// CHECK-NEXT:    int32_t i = (int32_t)tr;
// CHECK-NEXT:    int8_t u = (int8_t)(uint8_t)tr;
// CHECK-NEXT:    float fi = (float)i;
// CHECK-NEXT:    float fu = (float)(uint8_t)u;
// CHECK-NEXT:    int32_t bits;
// CHECK-NEXT:    memcpy(&bits, &(float){fu}, sizeof bits);
// CHECK-NEXT:    float back;
// CHECK-NEXT:    memcpy(&back, &(int32_t){bits}, sizeof back);

func.func @main(%m: memref<2xi32>, %n: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.load %m[%c0] : memref<2xi32>
  %b = memref.load %m[%c1] : memref<2xi32>
  %c = arith.trunci %a : i32 to i8
  %flag = arith.cmpi eq, %a, %b : i32
  %r = func.call @integers(%a, %b, %c, %flag) : (i32, i32, i8, i1) -> i32
  memref.store %r, %m[%c0] : memref<2xi32>
  %x = memref.load %n[%c0] : memref<2xf32>
  %y = arith.extf %x : f32 to f64
  %f = func.call @floats(%x, %y) : (f32, f64) -> f32
  memref.store %f, %n[%c1] : memref<2xf32>
  func.return
}

// CHECK-LABEL: int32_t usmp_default_run(struct usmp_default_inputs* inputs, struct usmp_default_outputs* outputs) {
// CHECK-NEXT:    int32_t* m = (int32_t*)outputs->m;
// CHECK-NEXT:    float* n = (float*)outputs->n;
// CHECK-NEXT:    (void)inputs;
// CHECK-NEXT:    int32_t a = m[0];
// CHECK-NEXT:    int32_t b = m[1];
// CHECK-NEXT:    int8_t c = (int8_t)a;
// CHECK-NEXT:    uint8_t flag = a == b;
// CHECK-NEXT:    int32_t r = integers(a, b, c, flag);
// CHECK-NEXT:    m[0] = r;
