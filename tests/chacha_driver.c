/*
 * The test driver of arch/ARCH/chacha20.S.j2 (tests/test_chacha.py links it
 * with the rendered routine and runs it under qemu-user).
 *
 * It checks __arch_chacha20_blocks_nostack against RFC 8439's vectors and
 * against the reference below for many block counts and counters, that it
 * writes nothing outside dst[0, 64 * nblocks) and the counter, and what it
 * leaves behind: every call runs on a stack of the driver's own, filled
 * with a canary, through a shim (call_on) that switches to it and loads the
 * callee-saved registers with a marker first.  After the call no word of
 * that stack and no register may hold a key word, a word of any
 * intermediate state or of the keystream (in either byte order), and the
 * callee-saved registers must hold the marker still; with -DSTACKLESS no
 * word of the stack may have changed at all.
 * The first failure is printed ("FAIL: ..."), and the exit status is 1.
 * With an argument, it prints the keystream of that test (see `dump`).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;

void __arch_chacha20_blocks_nostack(u8 *dst, const u32 *key, u32 *counter, size_t nblocks);

#define MAX_BLOCKS 64
#define CANARY 0xc5u		/* the stack's fill byte */
#define MARKER 0x5a5a5a5au	/* what the callee-saved registers hold, in each word */

/* --- the reference --------------------------------------------------------- */

/* The key words, and every word of the state after each double round and of the keystream. */
static u32 secrets[MAX_BLOCKS * 16 * 22 + 8];
static size_t nsecrets;

static u32 rotl(u32 x, int n)
{
	return x << n | x >> (32 - n);
}

static void quarter(u32 *x, int a, int b, int c, int d)
{
	x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 16);
	x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 12);
	x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 8);
	x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 7);
}

static void note(const u32 *x)
{
	for (int i = 0; i < 16 && nsecrets < sizeof(secrets) / sizeof(secrets[0]); i++)
		secrets[nsecrets++] = x[i];
}

/* One block of any input state (RFC 8439, 2.3), out in little-endian bytes. */
static void ref_block(const u32 in[16], u8 out[64])
{
	u32 x[16];

	memcpy(x, in, sizeof(x));
	for (int i = 0; i < 10; i++) {
		quarter(x, 0, 4, 8, 12); quarter(x, 1, 5, 9, 13);
		quarter(x, 2, 6, 10, 14); quarter(x, 3, 7, 11, 15);
		note(x);
		quarter(x, 0, 5, 10, 15); quarter(x, 1, 6, 11, 12);
		quarter(x, 2, 7, 8, 13); quarter(x, 3, 4, 9, 14);
		note(x);
	}
	for (int i = 0; i < 16; i++) {
		x[i] += in[i];
		for (int b = 0; b < 4; b++)
			out[4 * i + b] = (u8)(x[i] >> 8 * b);
	}
	note(x);
}

static void ref_state(u32 s[16], const u32 key[8], u64 counter)
{
	static const u32 sigma[4] = { 0x61707865, 0x3320646e, 0x79622d32, 0x6b206574 };

	memcpy(s, sigma, sizeof(sigma));
	memcpy(s + 4, key, 8 * sizeof(u32));
	s[12] = (u32)counter;
	s[13] = (u32)(counter >> 32);
	s[14] = s[15] = 0;
}

/* What the routine must do, by the reference; the key words are secrets too. */
static void ref_blocks(u8 *dst, const u32 key[8], u32 counter[2], size_t nblocks)
{
	u64 c = (u64)counter[1] << 32 | counter[0];
	u32 s[16];

	nsecrets = 0;
	for (int i = 0; i < 8; i++)
		secrets[nsecrets++] = key[i];
	for (size_t i = 0; i < nblocks; i++) {
		ref_state(s, key, c++);
		ref_block(s, dst + 64 * i);
	}
	counter[0] = (u32)c;
	counter[1] = (u32)(c >> 32);
}

/* --- the call, on a stack of our own ------------------------------------- */

#define STACK_BYTES 8192
#define ABOVE_SP 1024		/* the caller's frame: save areas the callee may use */
static u64 stack[STACK_BYTES / 8] __attribute__((aligned(64)));

/*
 * call_on(sp, dst, key, counter, n): the routine called with sp as its
 * stack pointer, the callee-saved registers holding MARKER (all but the one
 * that keeps the driver's sp, the one that points to `regs` and the PIC
 * registers, s390's r12 and powerpc's r30), so that what a routine saves of
 * them is no secret, and the other registers a routine may change zeroed
 * (but the arguments).  After the call the shim stores in `regs` the
 * registers a routine may change (NVOLATILE general ones, then NVECTOR
 * vector ones at VECTORS) and the callee-saved ones it set (NSAVED, at
 * SAVED).  SHIM_WRITES: bytes below sp the call itself writes.
 */
static unsigned long regs[96] __attribute__((aligned(16)));

#if defined(__aarch64__)
#define SHIM_WRITES 0
#define NVOLATILE 18		/* x0-x17 */
#define NSAVED 17		/* x20-x27, x29, d8-d15 */
#define SAVED 144
#define NVECTOR 24		/* v0-v7, v16-v31 */
#define VECTORS 280
static void call_on(void *sp, u8 *dst, const u32 *key, u32 *counter, size_t n)
{
	register u8 *x0 __asm__("x0") = dst;
	register const u32 *x1 __asm__("x1") = key;
	register u32 *x2 __asm__("x2") = counter;
	register size_t x3 __asm__("x3") = n;
	register void *x4 __asm__("x4") = sp;
	register unsigned long *x28 __asm__("x28") = regs;

	__asm__ volatile(
		"mov x19, sp\n\t"
		"mov sp, x4\n\t"
		"movz x20, #0x5a5a\n\tmovk x20, #0x5a5a, lsl #16\n\t"
		"movk x20, #0x5a5a, lsl #32\n\tmovk x20, #0x5a5a, lsl #48\n\t"
		"mov x21, x20\n\tmov x22, x20\n\tmov x23, x20\n\tmov x24, x20\n\t"
		"mov x25, x20\n\tmov x26, x20\n\tmov x27, x20\n\tmov x29, x20\n\t"
		"fmov d8, x20\n\tfmov d9, x20\n\tfmov d10, x20\n\tfmov d11, x20\n\t"
		"fmov d12, x20\n\tfmov d13, x20\n\tfmov d14, x20\n\tfmov d15, x20\n\t"
		"mov x5, xzr\n\tmov x6, xzr\n\tmov x7, xzr\n\tmov x8, xzr\n\tmov x9, xzr\n\t"
		"mov x10, xzr\n\tmov x11, xzr\n\tmov x12, xzr\n\tmov x13, xzr\n\tmov x14, xzr\n\t"
		"mov x15, xzr\n\tmov x16, xzr\n\tmov x17, xzr\n\t"
		"movi v0.16b, #0\n\tmovi v1.16b, #0\n\tmovi v2.16b, #0\n\tmovi v3.16b, #0\n\t"
		"movi v4.16b, #0\n\tmovi v5.16b, #0\n\tmovi v6.16b, #0\n\tmovi v7.16b, #0\n\t"
		"movi v16.16b, #0\n\tmovi v17.16b, #0\n\tmovi v18.16b, #0\n\tmovi v19.16b, #0\n\t"
		"movi v20.16b, #0\n\tmovi v21.16b, #0\n\tmovi v22.16b, #0\n\tmovi v23.16b, #0\n\t"
		"movi v24.16b, #0\n\tmovi v25.16b, #0\n\tmovi v26.16b, #0\n\tmovi v27.16b, #0\n\t"
		"movi v28.16b, #0\n\tmovi v29.16b, #0\n\tmovi v30.16b, #0\n\tmovi v31.16b, #0\n\t"
		"bl __arch_chacha20_blocks_nostack\n\t"
		"mov sp, x19\n\t"
		"stp x0, x1, [x28, #0]\n\tstp x2, x3, [x28, #16]\n\tstp x4, x5, [x28, #32]\n\t"
		"stp x6, x7, [x28, #48]\n\tstp x8, x9, [x28, #64]\n\tstp x10, x11, [x28, #80]\n\t"
		"stp x12, x13, [x28, #96]\n\tstp x14, x15, [x28, #112]\n\tstp x16, x17, [x28, #128]\n\t"
		"stp x20, x21, [x28, #144]\n\tstp x22, x23, [x28, #160]\n\tstp x24, x25, [x28, #176]\n\t"
		"stp x26, x27, [x28, #192]\n\tstr x29, [x28, #208]\n\t"
		"stp d8, d9, [x28, #216]\n\tstp d10, d11, [x28, #232]\n\tstp d12, d13, [x28, #248]\n\t"
		"str d14, [x28, #264]\n\tstr d15, [x28, #272]\n\t"
		"add x27, x28, #280\n\t"
		"st1 {v0.16b, v1.16b, v2.16b, v3.16b}, [x27], #64\n\t"
		"st1 {v4.16b, v5.16b, v6.16b, v7.16b}, [x27], #64\n\t"
		"st1 {v16.16b, v17.16b, v18.16b, v19.16b}, [x27], #64\n\t"
		"st1 {v20.16b, v21.16b, v22.16b, v23.16b}, [x27], #64\n\t"
		"st1 {v24.16b, v25.16b, v26.16b, v27.16b}, [x27], #64\n\t"
		"st1 {v28.16b, v29.16b, v30.16b, v31.16b}, [x27]"
		: "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3), "+r"(x4), "+r"(x28)
		:
		: "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15",
		  "x16", "x17", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27",
		  "x29", "x30",
		  "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11",
		  "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22",
		  "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "cc", "memory");
}
#elif defined(__riscv) && __riscv_xlen == 64
#define SHIM_WRITES 0
#define NVOLATILE 16		/* ra, t0-t6, a0-a7 */
#define NSAVED 10		/* s0, s2-s10 */
#define SAVED 128
#define NVECTOR 0
#define VECTORS 0
static void call_on(void *sp, u8 *dst, const u32 *key, u32 *counter, size_t n)
{
	register u8 *a0 __asm__("a0") = dst;
	register const u32 *a1 __asm__("a1") = key;
	register u32 *a2 __asm__("a2") = counter;
	register size_t a3 __asm__("a3") = n;
	register void *a4 __asm__("a4") = sp;
	register unsigned long *s11 __asm__("s11") = regs;

	__asm__ volatile(
		"mv s1, sp\n\t"
		"mv sp, a4\n\t"
		"li s0, 0x5a5a5a5a5a5a5a5a\n\t"
		"mv s2, s0\n\tmv s3, s0\n\tmv s4, s0\n\tmv s5, s0\n\tmv s6, s0\n\t"
		"mv s7, s0\n\tmv s8, s0\n\tmv s9, s0\n\tmv s10, s0\n\t"
		"li t0, 0\n\tli t1, 0\n\tli t2, 0\n\tli t3, 0\n\tli t4, 0\n\tli t5, 0\n\tli t6, 0\n\t"
		"li a5, 0\n\tli a6, 0\n\tli a7, 0\n\t"
		"call __arch_chacha20_blocks_nostack\n\t"
		"mv sp, s1\n\t"
		"sd ra, 0(s11)\n\tsd t0, 8(s11)\n\tsd t1, 16(s11)\n\tsd t2, 24(s11)\n\t"
		"sd t3, 32(s11)\n\tsd t4, 40(s11)\n\tsd t5, 48(s11)\n\tsd t6, 56(s11)\n\t"
		"sd a0, 64(s11)\n\tsd a1, 72(s11)\n\tsd a2, 80(s11)\n\tsd a3, 88(s11)\n\t"
		"sd a4, 96(s11)\n\tsd a5, 104(s11)\n\tsd a6, 112(s11)\n\tsd a7, 120(s11)\n\t"
		"sd s0, 128(s11)\n\tsd s2, 136(s11)\n\tsd s3, 144(s11)\n\tsd s4, 152(s11)\n\t"
		"sd s5, 160(s11)\n\tsd s6, 168(s11)\n\tsd s7, 176(s11)\n\tsd s8, 184(s11)\n\t"
		"sd s9, 192(s11)\n\tsd s10, 200(s11)"
		: "+r"(a0), "+r"(a1), "+r"(a2), "+r"(a3), "+r"(a4), "+r"(s11)
		:
		: "ra", "t0", "t1", "t2", "t3", "t4", "t5", "t6", "a5", "a6", "a7",
		  "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "memory");
}
#elif defined(__loongarch64)
#define SHIM_WRITES 0
#define NVOLATILE 18		/* ra, a0-a7, t0-t8 */
#define NSAVED 8		/* s1-s7, fp */
#define SAVED 144
#define NVECTOR 0
#define VECTORS 0
static void call_on(void *sp, u8 *dst, const u32 *key, u32 *counter, size_t n)
{
	register u8 *a0 __asm__("$a0") = dst;
	register const u32 *a1 __asm__("$a1") = key;
	register u32 *a2 __asm__("$a2") = counter;
	register size_t a3 __asm__("$a3") = n;
	register void *a4 __asm__("$a4") = sp;
	register unsigned long *s8 __asm__("$s8") = regs;

	__asm__ volatile(
		"move $s0, $sp\n\t"
		"move $sp, $a4\n\t"
		"li.d $s1, 0x5a5a5a5a5a5a5a5a\n\t"
		"move $s2, $s1\n\tmove $s3, $s1\n\tmove $s4, $s1\n\tmove $s5, $s1\n\t"
		"move $s6, $s1\n\tmove $s7, $s1\n\tmove $fp, $s1\n\t"
		"move $t0, $zero\n\tmove $t1, $zero\n\tmove $t2, $zero\n\tmove $t3, $zero\n\t"
		"move $t4, $zero\n\tmove $t5, $zero\n\tmove $t6, $zero\n\tmove $t7, $zero\n\t"
		"move $t8, $zero\n\tmove $a5, $zero\n\tmove $a6, $zero\n\tmove $a7, $zero\n\t"
		"bl __arch_chacha20_blocks_nostack\n\t"
		"move $sp, $s0\n\t"
		"st.d $ra, $s8, 0\n\tst.d $a0, $s8, 8\n\tst.d $a1, $s8, 16\n\tst.d $a2, $s8, 24\n\t"
		"st.d $a3, $s8, 32\n\tst.d $a4, $s8, 40\n\tst.d $a5, $s8, 48\n\tst.d $a6, $s8, 56\n\t"
		"st.d $a7, $s8, 64\n\tst.d $t0, $s8, 72\n\tst.d $t1, $s8, 80\n\tst.d $t2, $s8, 88\n\t"
		"st.d $t3, $s8, 96\n\tst.d $t4, $s8, 104\n\tst.d $t5, $s8, 112\n\tst.d $t6, $s8, 120\n\t"
		"st.d $t7, $s8, 128\n\tst.d $t8, $s8, 136\n\t"
		"st.d $s1, $s8, 144\n\tst.d $s2, $s8, 152\n\tst.d $s3, $s8, 160\n\tst.d $s4, $s8, 168\n\t"
		"st.d $s5, $s8, 176\n\tst.d $s6, $s8, 184\n\tst.d $s7, $s8, 192\n\tst.d $fp, $s8, 200"
		: "+r"(a0), "+r"(a1), "+r"(a2), "+r"(a3), "+r"(a4), "+r"(s8)
		:
		: "$ra", "$t0", "$t1", "$t2", "$t3", "$t4", "$t5", "$t6", "$t7", "$t8", "$a5", "$a6", "$a7",
		  "$s0", "$s1", "$s2", "$s3", "$s4", "$s5", "$s6", "$s7", "$fp", "memory");
}
#elif defined(__s390x__)
#define SHIM_WRITES 0
#define NVOLATILE 7		/* r0-r5, r14 */
#define NSAVED 5		/* r6-r10 */
#define SAVED 56
#define NVECTOR 24		/* v0-v7, v16-v31 */
#define VECTORS 96
static void call_on(void *sp, u8 *dst, const u32 *key, u32 *counter, size_t n)
{
	register u8 *r2 __asm__("r2") = dst;
	register const u32 *r3 __asm__("r3") = key;
	register u32 *r4 __asm__("r4") = counter;
	register size_t r5 __asm__("r5") = n;
	register void *r1 __asm__("r1") = sp;
	register unsigned long *r11 __asm__("r11") = regs;

	__asm__ volatile(
		"lgr %%r13, %%r15\n\t"
		"lgr %%r15, %%r1\n\t"
		"llihf %%r6, 0x5a5a5a5a\n\tiilf %%r6, 0x5a5a5a5a\n\t"
		"lgr %%r7, %%r6\n\tlgr %%r8, %%r6\n\tlgr %%r9, %%r6\n\tlgr %%r10, %%r6\n\t"
		"lghi %%r0, 0\n\t"
		".machine push\n\t.machine \"z13\"\n\t"
		"vzero %%v0\n\tvzero %%v1\n\tvzero %%v2\n\tvzero %%v3\n\t"
		"vzero %%v4\n\tvzero %%v5\n\tvzero %%v6\n\tvzero %%v7\n\t"
		"vzero %%v16\n\tvzero %%v17\n\tvzero %%v18\n\tvzero %%v19\n\t"
		"vzero %%v20\n\tvzero %%v21\n\tvzero %%v22\n\tvzero %%v23\n\t"
		"vzero %%v24\n\tvzero %%v25\n\tvzero %%v26\n\tvzero %%v27\n\t"
		"vzero %%v28\n\tvzero %%v29\n\tvzero %%v30\n\tvzero %%v31\n\t"
		".machine pop\n\t"
		"brasl %%r14, __arch_chacha20_blocks_nostack\n\t"
		"lgr %%r15, %%r13\n\t"
		"stmg %%r0, %%r5, 0(%%r11)\n\tstg %%r14, 48(%%r11)\n\tstmg %%r6, %%r10, 56(%%r11)\n\t"
		".machine push\n\t.machine \"z13\"\n\t"
		"vstm %%v0, %%v7, 96(%%r11)\n\tvstm %%v16, %%v31, 224(%%r11)\n\t"
		".machine pop"
		: "+r"(r2), "+r"(r3), "+r"(r4), "+r"(r5), "+r"(r1), "+r"(r11)
		:
		: "r0", "r6", "r7", "r8", "r9", "r10", "r13", "r14",
		  "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "cc", "memory");
}
#elif defined(__powerpc__)
#define SHIM_WRITES 0
#define NVOLATILE 11		/* r0, r3-r12 */
#define NSAVED 14		/* r14-r27 */
#define SAVED (11 * SZ)
#define NVECTOR 0
#define VECTORS 0
#ifdef __powerpc64__
#define SZ 8
#define MARKER_HIGH "rldimi 14, 14, 32, 0\n\t"	/* the 64-bit marker */
#define ST(r, i) "std " #r ", " #i "*8(28)\n\t"
#else
#define SZ 4
#define MARKER_HIGH
#define ST(r, i) "stw " #r ", " #i "*4(28)\n\t"
#endif
static void call_on(void *sp, u8 *dst, const u32 *key, u32 *counter, size_t n)
{
	register u8 *r3 __asm__("r3") = dst;
	register const u32 *r4 __asm__("r4") = key;
	register u32 *r5 __asm__("r5") = counter;
	register size_t r6 __asm__("r6") = n;
	register void *r7 __asm__("r7") = sp;
	register unsigned long *r28 __asm__("r28") = regs;

	/* r29 keeps the driver's sp */
	__asm__ volatile(
		"mr 29, 1\n\t"
		"mr 1, 7\n\t"
		"lis 14, 0x5a5a\n\tori 14, 14, 0x5a5a\n\t" MARKER_HIGH
		"mr 15, 14\n\tmr 16, 14\n\tmr 17, 14\n\tmr 18, 14\n\tmr 19, 14\n\tmr 20, 14\n\t"
		"mr 21, 14\n\tmr 22, 14\n\tmr 23, 14\n\tmr 24, 14\n\tmr 25, 14\n\tmr 26, 14\n\t"
		"mr 27, 14\n\tmr 31, 14\n\t"
		"li 0, 0\n\tli 8, 0\n\tli 9, 0\n\tli 10, 0\n\tli 11, 0\n\tli 12, 0\n\t"
		"bl __arch_chacha20_blocks_nostack\n\t"
		"nop\n\t"
		"mr 1, 29\n\t"
		ST(0, 0) ST(3, 1) ST(4, 2) ST(5, 3) ST(6, 4) ST(7, 5) ST(8, 6) ST(9, 7) ST(10, 8)
		ST(11, 9) ST(12, 10)
		ST(14, 11) ST(15, 12) ST(16, 13) ST(17, 14) ST(18, 15) ST(19, 16) ST(20, 17)
		ST(21, 18) ST(22, 19) ST(23, 20) ST(24, 21) ST(25, 22) ST(26, 23) ST(27, 24)
		: "+r"(r3), "+r"(r4), "+r"(r5), "+r"(r6), "+r"(r7), "+r"(r28)
		:
		: "r0", "r8", "r9", "r10", "r11", "r12", "r14", "r15", "r16", "r17", "r18", "r19",
		  "r20", "r21", "r22", "r23", "r24", "r25", "r26", "r27", "r29", "r31",
		  "lr", "ctr", "xer", "cr0", "cr1", "cr5", "cr6", "cr7", "memory");
}
#elif defined(__x86_64__)
#define SHIM_WRITES 8		/* call: the return address */
#define NVOLATILE 9		/* rax, rcx, rdx, rsi, rdi, r8-r11 */
#define NSAVED 4		/* rbp, r12-r14 */
#define SAVED 72
#define NVECTOR 16		/* xmm0-xmm15 */
#define VECTORS 112
static void call_on(void *sp, u8 *dst, const u32 *key, u32 *counter, size_t n)
{
	register u8 *rdi __asm__("rdi") = dst;
	register const u32 *rsi __asm__("rsi") = key;
	register u32 *rdx __asm__("rdx") = counter;
	register size_t rcx __asm__("rcx") = n;
	register void *rax __asm__("rax") = sp;
	register unsigned long *r15 __asm__("r15") = regs;

	/* rbx keeps the driver's sp */
	__asm__ volatile(
		"mov %%rsp, %%rbx\n\t"
		"mov %%rax, %%rsp\n\t"
		"mov $0x5a5a5a5a5a5a5a5a, %%rbp\n\t"
		"mov %%rbp, %%r12\n\tmov %%rbp, %%r13\n\tmov %%rbp, %%r14\n\t"
		"xor %%eax, %%eax\n\txor %%r8d, %%r8d\n\txor %%r9d, %%r9d\n\t"
		"xor %%r10d, %%r10d\n\txor %%r11d, %%r11d\n\t"
		"pxor %%xmm0, %%xmm0\n\tpxor %%xmm1, %%xmm1\n\tpxor %%xmm2, %%xmm2\n\tpxor %%xmm3, %%xmm3\n\t"
		"pxor %%xmm4, %%xmm4\n\tpxor %%xmm5, %%xmm5\n\tpxor %%xmm6, %%xmm6\n\tpxor %%xmm7, %%xmm7\n\t"
		"pxor %%xmm8, %%xmm8\n\tpxor %%xmm9, %%xmm9\n\tpxor %%xmm10, %%xmm10\n\tpxor %%xmm11, %%xmm11\n\t"
		"pxor %%xmm12, %%xmm12\n\tpxor %%xmm13, %%xmm13\n\tpxor %%xmm14, %%xmm14\n\tpxor %%xmm15, %%xmm15\n\t"
		"call __arch_chacha20_blocks_nostack\n\t"
		"mov %%rbx, %%rsp\n\t"
		"mov %%rax, 0(%%r15)\n\tmov %%rcx, 8(%%r15)\n\tmov %%rdx, 16(%%r15)\n\t"
		"mov %%rsi, 24(%%r15)\n\tmov %%rdi, 32(%%r15)\n\tmov %%r8, 40(%%r15)\n\t"
		"mov %%r9, 48(%%r15)\n\tmov %%r10, 56(%%r15)\n\tmov %%r11, 64(%%r15)\n\t"
		"mov %%rbp, 72(%%r15)\n\tmov %%r12, 80(%%r15)\n\tmov %%r13, 88(%%r15)\n\tmov %%r14, 96(%%r15)\n\t"
		"movdqu %%xmm0, 112(%%r15)\n\tmovdqu %%xmm1, 128(%%r15)\n\tmovdqu %%xmm2, 144(%%r15)\n\t"
		"movdqu %%xmm3, 160(%%r15)\n\tmovdqu %%xmm4, 176(%%r15)\n\tmovdqu %%xmm5, 192(%%r15)\n\t"
		"movdqu %%xmm6, 208(%%r15)\n\tmovdqu %%xmm7, 224(%%r15)\n\tmovdqu %%xmm8, 240(%%r15)\n\t"
		"movdqu %%xmm9, 256(%%r15)\n\tmovdqu %%xmm10, 272(%%r15)\n\tmovdqu %%xmm11, 288(%%r15)\n\t"
		"movdqu %%xmm12, 304(%%r15)\n\tmovdqu %%xmm13, 320(%%r15)\n\tmovdqu %%xmm14, 336(%%r15)\n\t"
		"movdqu %%xmm15, 352(%%r15)"
		: "+r"(rdi), "+r"(rsi), "+r"(rdx), "+r"(rcx), "+r"(rax), "+r"(r15)
		:
		: "rbx", "rbp", "r8", "r9", "r10", "r11", "r12", "r13", "r14",
		  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
		  "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory");
}
#else
#error "no call_on for this architecture"
#endif

/* --- the checks ------------------------------------------------------------ */

static int failed;

static void fail(const char *what, size_t n, u64 counter, long at)
{
	if (!failed)
		printf("FAIL: %s (nblocks %zu, counter %#llx, at %ld)\n", what, n,
		       (unsigned long long)counter, at);
	failed = 1;
}

/* w is a secret word, in either byte order. */
static int secret(u32 w)
{
	u32 r = w >> 24 | (w >> 8 & 0xff00) | (w << 8 & 0xff0000) | w << 24;

	for (size_t i = 0; i < nsecrets; i++)
		if (secrets[i] == w || secrets[i] == r)
			return 1;
	return 0;
}

/* The registers after a call: no secret in any, the callee-saved ones as they were. */
static void check_regs(size_t n, u64 counter)
{
	const u8 *b = (const u8 *)regs;
	u32 w;

	for (size_t i = 0; i < NVOLATILE * sizeof(long) / 4; i++) {
		memcpy(&w, b + 4 * i, 4);
		if (secret(w))
			fail("a secret left in a general register (its slot)", n, counter, (long)(4 * i / sizeof(long)));
	}
#if NVECTOR
	for (size_t i = 0; i < NVECTOR * 4; i++) {
		memcpy(&w, b + VECTORS + 4 * i, 4);
		if (secret(w))
			fail("a secret left in a vector register (its slot)", n, counter, (long)i / 4);
	}
#endif
	for (size_t i = 0; i < NSAVED; i++)
		if (regs[SAVED / sizeof(long) + i] != (unsigned long)0x5a5a5a5a5a5a5a5aull)
			fail("a callee-saved register changed (its slot)", n, counter, (long)i);
}

#define GUARD 64
static u8 out[GUARD + 64 * MAX_BLOCKS + 8 + GUARD];
static u8 want[64 * MAX_BLOCKS];

/*
 * One call at dst = out + GUARD + misalign: its keystream, counter and key
 * against the reference, the bytes around dst, the stack.
 */
static void check(const u32 key[8], u64 counter, size_t n, size_t misalign)
{
	u32 k[8], c[2] = { (u32)counter, (u32)(counter >> 32) }, rc[2] = { c[0], c[1] };
	u8 *dst = out + GUARD + misalign;
	u8 *top = (u8 *)stack + STACK_BYTES - ABOVE_SP;

	memcpy(k, key, sizeof(k));
	ref_blocks(want, key, rc, n);
	memset(out, 0xee, sizeof(out));
	memset(stack, CANARY, sizeof(stack));
	call_on(top, dst, k, c, n);

	if (memcmp(dst, want, 64 * n))
		fail("keystream differs from the reference", n, counter, 0);
	for (size_t i = 0; i < sizeof(out); i++)
		if ((out + i < dst || out + i >= dst + 64 * n) && out[i] != 0xee)
			fail("a byte outside dst[0, 64 * nblocks) written", n, counter, (long)(out + i - dst));
	if (c[0] != rc[0] || c[1] != rc[1])
		fail("counter not advanced by nblocks", n, counter, 0);
	if (memcmp(k, key, sizeof(k)))
		fail("key changed", n, counter, 0);
	check_regs(n, counter);
	for (size_t i = 0; i < STACK_BYTES / 4; i++) {
		u32 w;
		long off = (long)(4 * i) - (long)(STACK_BYTES - ABOVE_SP);

		memcpy(&w, (u8 *)stack + 4 * i, 4);
		if (w == CANARY * 0x01010101u || (off < 0 && off >= -SHIM_WRITES))
			continue;
		if (secret(w))
			fail("a secret word on the stack (offset from sp)", n, counter, off);
#ifdef STACKLESS
		fail("the stack written (offset from sp)", n, counter, off);
#endif
	}
}

/* RFC 8439 A.1, test vectors 1-4: key, counter (the nonce is zero), block. */
static const struct {
	u8 key[32];
	u64 counter;
	const char *block;
} a1[] = {
	{ { 0 }, 0, "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
		    "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586" },
	{ { 0 }, 1, "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
		    "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f" },
	{ { [31] = 1 }, 1, "3aeb5224ecf849929b9d828db1ced4dd832025e8018b8160b82284f3c949aa5a"
			   "8eca00bbb4a73bdad192b5c42f73f2fd4e273644c8b36125a64addeb006c13a0" },
	{ { [1] = 0xff }, 2, "72d54dfbf12ec44b362692df94137f328fea8da73990265ec1bbbea1ae9af0ca"
			     "13b25aa26cb4a648cb9b9d1be65b2c0924a66c54d545ec1b7374f4872e99f096" },
};

/* RFC 8439 2.3.2: the state (its nonce is not zero) and its block. */
static const u32 s232[16] = {
	0x61707865, 0x3320646e, 0x79622d32, 0x6b206574, 0x03020100, 0x07060504, 0x0b0a0908, 0x0f0e0d0c,
	0x13121110, 0x17161514, 0x1b1a1918, 0x1f1e1d1c, 0x00000001, 0x09000000, 0x4a000000, 0x00000000,
};
static const char b232[] = "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
			   "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e";

static int nibble(char c)
{
	return c <= '9' ? c - '0' : c - 'a' + 10;
}

static void unhex(const char *s, u8 *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (u8)(nibble(s[2 * i]) << 4 | nibble(s[2 * i + 1]));
}

static void words(const u8 *b, u32 *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		w[i] = b[4 * i] | b[4 * i + 1] << 8 | b[4 * i + 2] << 16 | (u32)b[4 * i + 3] << 24;
}

/* `dump N`: the keystream of N blocks, key 00 01 .. 1f, from counter 2^32 - 3, in hex. */
static int dump(size_t n)
{
	u8 kb[32];
	u32 key[8], c[2] = { 0xfffffffd, 0 };

	for (int i = 0; i < 32; i++)
		kb[i] = (u8)i;
	words(kb, key, 8);
	memset(stack, CANARY, sizeof(stack));
	call_on((u8 *)stack + STACK_BYTES - ABOVE_SP, out, key, c, n);
	for (size_t i = 0; i < 64 * n; i++)
		printf("%02x", out[i]);
	printf("\n%08x%08x\n", c[1], c[0]);
	return 0;
}

int main(int argc, char **argv)
{
	static const size_t counts[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 31, 63, 64 };
	static const u64 counters[] = { 0, 1, 0xfffffffe, 0xffffffff, 0x00000001fffffffdull,
					0x0900000000000001ull, 0xfffffffffffffffeull };
	u8 b[64], kb[32];
	u32 key[8];

	if (argc > 1)
		return dump(strtoul(argv[1], NULL, 10));

	/* the reference, against the RFC's block of a state with a nonce */
	unhex(b232, b, 64);
	ref_block(s232, want);
	if (memcmp(want, b, 64))
		fail("the reference fails RFC 8439 2.3.2", 1, 1, 0);

	/* the routine, against the RFC's blocks of a zero nonce */
	for (size_t i = 0; i < sizeof(a1) / sizeof(a1[0]); i++) {
		u32 c[2] = { (u32)a1[i].counter, 0 };

		words(a1[i].key, key, 8);
		unhex(a1[i].block, b, 64);
		memset(stack, CANARY, sizeof(stack));
		call_on((u8 *)stack + STACK_BYTES - ABOVE_SP, out, key, c, 1);
		if (memcmp(out, b, 64) || c[0] != a1[i].counter + 1)
			fail("RFC 8439 A.1 test vector", 1, a1[i].counter, (long)i + 1);
	}

	/* 2.3.2's key and counter, its nonce word 13 as the counter's high word */
	for (int i = 0; i < 32; i++)
		kb[i] = (u8)i;
	words(kb, key, 8);
	for (size_t n = 0; n < sizeof(counts) / sizeof(counts[0]); n++)
		for (size_t c = 0; c < sizeof(counters) / sizeof(counters[0]); c++)
			check(key, counters[c], counts[n], (n + c) % 8);

	/* other keys: all ones, and one of every byte value's neighbours */
	memset(kb, 0xff, sizeof(kb));
	words(kb, key, 8);
	check(key, 0xffffffff, 5, 1);
	for (int i = 0; i < 32; i++)
		kb[i] = (u8)(0x80 + 7 * i);
	words(kb, key, 8);
	check(key, 0x123456789abcdef0ull, 9, 3);

	if (MARKER == 0 || secret(MARKER))
		fail("the marker is a secret word: choose another", 0, 0, 0);
	if (!failed)
		printf("ok\n");
	return failed;
}
