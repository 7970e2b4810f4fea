"""The Cortex-M runtime shared by the firmware harness (`usmp_dialect.testing.firmware`) and
the projects `usmp-opt -t project` writes (`cortex-m/startup.c`, `cortex-m/mps2_an386.ld`).

* `STARTUP_SOURCE`: vector table, reset handler (`.data` copied from flash, `.bss` and the
  extra workspace sections zeroed, FPU enabled), SysTick wrap counter and raw ARM semihosting
  (`usmp_write` = `SYS_WRITE0`; `main`'s return value ends QEMU through `SYS_EXIT`). No newlib
  stdio, heap or syscalls.
* `linker_script`: the memory map of QEMU's MPS2 boards (code and constants in the 4 MiB
  SSRAM1 at 0, data, bss and the stack in 4 MiB at 0x20000000, named pool sections in the
  16 MiB PSRAM).
"""

from __future__ import annotations

from collections.abc import Sequence

EXTRA_REGION_BYTES = 16 * 1024 * 1024
"""The size of the linker script's extra region (for named pool sections)."""

M4F_FLAGS = ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16")
"""Cortex-M4 with its single-precision FPU (QEMU's `mps2-an386`)."""


STARTUP_SOURCE = r"""/* Tiny Cortex-M runtime of the firmware harness. */
#include <stddef.h>
#include <stdint.h>

extern uint32_t __data_load[], __data_start[], __data_end[];
extern uint32_t __bss_start[], __bss_end[], __extra_bss_start[], __extra_bss_end[];
extern uint32_t __stack_limit[], __stack_top[];
int main(void);

#define SYST_CSR (*(volatile uint32_t*)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t*)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t*)0xE000E018u)
#define CPACR (*(volatile uint32_t*)0xE000ED88u)
#define SYSTICK_RELOAD 0xFFFFFFu
#define PAINT 0x5AA5C33Cu
#define PAINT_BYTES 65536u

static volatile uint32_t systick_wraps;
static uint32_t* painted_top;

static uint32_t semihost(uint32_t operation, const void* argument) {
  register uint32_t r0 __asm__("r0") = operation;
  register const void* r1 __asm__("r1") = argument;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

void usmp_write(const char* text) { semihost(0x04u, text); /* SYS_WRITE0 */ }

static void usmp_exit(int status) {
  /* SYS_EXIT: ADP_Stopped_ApplicationExit ends QEMU with 0, RunTimeErrorUnknown with 1. */
  semihost(0x18u, (const void*)(uintptr_t)(status == 0 ? 0x20026u : 0x20023u));
  for (;;) {
  }
}

uint64_t usmp_ticks(void) {
  uint32_t wraps, value;
  do {
    wraps = systick_wraps;
    value = SYST_CVR;
  } while (wraps != systick_wraps);
  return (uint64_t)wraps * (SYSTICK_RELOAD + 1u) + (SYSTICK_RELOAD - value);
}

/* SysTick counts the 25 MHz CPU clock; with -icount shift=0 one instruction is 1 ns. */
uint32_t usmp_ticks_to_instructions(uint64_t ticks) { return (uint32_t)(ticks * 40u); }

__attribute__((noinline)) size_t usmp_paint_stack(void) {
  uint32_t* sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  painted_top = sp; /* a leaf without a frame: the caller's stack pointer */
  uint32_t* bottom = painted_top - PAINT_BYTES / 4u;
  if (bottom < __stack_limit) bottom = __stack_limit;
  for (uint32_t* word = bottom; word < painted_top; ++word) *word = PAINT;
  return (size_t)(painted_top - bottom) * 4u;
}

size_t usmp_stack_used(void) {
  uint32_t* bottom = painted_top - PAINT_BYTES / 4u;
  if (bottom < __stack_limit) bottom = __stack_limit;
  uint32_t* word = bottom;
  while (word < painted_top && *word == PAINT) ++word;
  return (size_t)(painted_top - word) * 4u;
}

void reset_handler(void) {
  for (uint32_t *from = __data_load, *to = __data_start; to < __data_end;) *to++ = *from++;
  for (uint32_t* word = __bss_start; word < __bss_end;) *word++ = 0;
  for (uint32_t* word = __extra_bss_start; word < __extra_bss_end;) *word++ = 0;
#ifdef __ARM_FP
  CPACR |= 0xFu << 20; /* CP10, CP11: full access */
  __asm__ volatile("dsb\n isb" ::: "memory");
#endif
  SYST_RVR = SYSTICK_RELOAD;
  SYST_CVR = 0;
  SYST_CSR = 7u; /* enable, interrupt, CPU clock */
  usmp_exit(main());
}

void systick_handler(void) { systick_wraps = systick_wraps + 1u; }

void fault_handler(void) {
  usmp_write("# fault\n");
  usmp_exit(2);
}

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)__stack_top,
    reset_handler,
    fault_handler, /* NMI */
    fault_handler, /* HardFault */
    fault_handler, /* MemManage */
    fault_handler, /* BusFault */
    fault_handler, /* UsageFault */
    0, 0, 0, 0,
    fault_handler, /* SVCall */
    fault_handler, /* DebugMonitor */
    0,
    fault_handler, /* PendSV */
    systick_handler,
};
"""


def linker_script(sections: Sequence[tuple[str, str]] = (), extra_region: int = 0x21000000) -> str:
    """The memory map of the MPS2 boards; each (section, kind) goes to the extra region."""
    workspace = [name for name, kind in sections if kind != "constant"]  # workspace, state
    constant = [name for name, kind in sections if kind == "constant"]
    extra_constant = "".join(f"    KEEP(*({name}))\n" for name in constant)
    extra_workspace = "".join(f"    KEEP(*({name}))\n" for name in workspace)
    return f"""/* Linker script of the firmware harness (usmp_dialect.testing.firmware). */
MEMORY
{{
  FLASH (rx) : ORIGIN = 0x00000000, LENGTH = 4M
  RAM (rwx) : ORIGIN = 0x20000000, LENGTH = 4M
  EXTRA (rwx) : ORIGIN = {extra_region:#010x}, LENGTH = {EXTRA_REGION_BYTES // 1024}K
}}
ENTRY(reset_handler)
SECTIONS
{{
  .text : {{
    KEEP(*(.vectors))
    *(.text*)
    *(.rodata*)
    . = ALIGN(8);
  }} > FLASH
  .ARM.exidx : {{ *(.ARM.exidx*) }} > FLASH
  .data : {{
    __data_start = .;
    *(.data*)
    . = ALIGN(8);
    __data_end = .;
  }} > RAM AT > FLASH
  __data_load = LOADADDR(.data);
  .bss (NOLOAD) : {{
    __bss_start = .;
    *(.bss*)
    *(COMMON)
    . = ALIGN(8);
    __bss_end = .;
  }} > RAM
  .extra_constant : {{
    __extra_constant_start = .;
{extra_constant}    . = ALIGN(8);
  }} > EXTRA
  .extra_bss (NOLOAD) : {{
    . = ALIGN(8);
    __extra_bss_start = .;
{extra_workspace}    . = ALIGN(8);
    __extra_bss_end = .;
  }} > EXTRA
  __stack_limit = __bss_end;
  __stack_top = ORIGIN(RAM) + LENGTH(RAM);
  /DISCARD/ : {{ *(.ARM.attributes*) *(.comment*) }}
}}
"""
