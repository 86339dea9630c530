/*
 * Freestanding harness: the 64-bit arithmetic a 32-bit ABI's compiler
 * leaves to its runtime library (libgcc or compiler-rt, which a
 * freestanding harness links neither of): division and conversions
 * between 64-bit integers and double.  Only what the harness's code calls;
 * a 64-bit ABI needs none of it.  Every routine here is made of 32-bit
 * operations and 64-bit shifts, which the compiler open-codes, so none
 * calls itself.
 */
#include <stdint.h>

#if __SIZEOF_LONG__ == 4

uint64_t __udivdi3(uint64_t n, uint64_t d);
uint64_t __umoddi3(uint64_t n, uint64_t d);
int64_t __divdi3(int64_t n, int64_t d);
int64_t __moddi3(int64_t n, int64_t d);
double __floatundidf(uint64_t a);
double __floatdidf(int64_t a);
uint64_t __fixunsdfdi(double d);
int64_t __fixdfdi(double d);
int __cmpdi2(int64_t a, int64_t b);

/* n / d, and n % d in *rem: by 32-bit division where both fit, else one quotient bit a step. */
static uint64_t udivmod(uint64_t n, uint64_t d, uint64_t *rem)
{
	uint64_t q = 0, r = 0;
	int i;

	if (d == 0)
		__builtin_trap();		/* as the hardware's division by zero would, on an ABI that traps */
	if (!(n >> 32) && !(d >> 32)) {
		*rem = (uint32_t)n % (uint32_t)d;
		return (uint32_t)n / (uint32_t)d;
	}
	for (i = 63; i >= 0; i--) {
		r = r << 1 | ((n >> i) & 1);
		if (r >= d) {
			r -= d;
			q |= (uint64_t)1 << i;
		}
	}
	*rem = r;
	return q;
}

uint64_t __udivdi3(uint64_t n, uint64_t d)
{
	uint64_t r;

	return udivmod(n, d, &r);
}

uint64_t __umoddi3(uint64_t n, uint64_t d)
{
	uint64_t r;

	udivmod(n, d, &r);
	return r;
}

/* C's signed division truncates: the quotient's sign is the operands', the remainder's the dividend's. */
int64_t __divdi3(int64_t n, int64_t d)
{
	uint64_t r, q = udivmod(n < 0 ? -(uint64_t)n : (uint64_t)n, d < 0 ? -(uint64_t)d : (uint64_t)d, &r);

	return (int64_t)((n < 0) != (d < 0) ? -q : q);
}

int64_t __moddi3(int64_t n, int64_t d)
{
	uint64_t r;

	udivmod(n < 0 ? -(uint64_t)n : (uint64_t)n, d < 0 ? -(uint64_t)d : (uint64_t)d, &r);
	return (int64_t)(n < 0 ? -r : r);
}

/* hi * 2^32 is exact in a double, so the one rounding is the sum's. */
double __floatundidf(uint64_t a)
{
	return (double)(uint32_t)(a >> 32) * 4294967296.0 + (double)(uint32_t)a;
}

double __floatdidf(int64_t a)
{
	return a < 0 ? -__floatundidf(-(uint64_t)a) : __floatundidf((uint64_t)a);
}

/* Truncation toward zero; out of range (NaN, negative, 2^64 and up) saturates as RISC-V's fcvt does. */
uint64_t __fixunsdfdi(double d)
{
	uint32_t hi;

	if (!(d > 0))
		return 0;
	if (d >= 18446744073709551616.0)
		return UINT64_MAX;
	hi = (uint32_t)(d / 4294967296.0);
	return (uint64_t)hi << 32 | (uint32_t)(d - (double)hi * 4294967296.0);
}

int64_t __fixdfdi(double d)
{
	if (d < -9223372036854775808.0)
		return INT64_MIN;
	if (d >= 9223372036854775808.0)
		return INT64_MAX;
	return d < 0 ? -(int64_t)__fixunsdfdi(-d) : (int64_t)__fixunsdfdi(d);
}

/* a against b: 0 below, 1 equal, 2 above (32-bit SPARC's gcc calls it); by halves, the high one signed. */
int __cmpdi2(int64_t a, int64_t b)
{
	int32_t ah = (int32_t)((uint64_t)a >> 32), bh = (int32_t)((uint64_t)b >> 32);
	uint32_t al = (uint32_t)a, bl = (uint32_t)b;

	if (ah != bh)
		return ah < bh ? 0 : 2;
	if (al != bl)
		return al < bl ? 0 : 2;
	return 1;
}

#else
typedef int fs_arith64_none;		/* ISO C: a translation unit declares something */
#endif
