/*
 * getrandom() of the generic vDSO core, the same file for every vdsogen
 * target that exports it (functions.toml: header); vdso.c includes it
 * after vdso_core.h, the test harness for its types alone.
 */
#ifndef VDSOGEN_GETRANDOM_H
#define VDSOGEN_GETRANDOM_H

#include <stddef.h>
#include <stdint.h>

/*
 * getrandom's opaque-state query, getrandom(NULL, 0, 0, &params, ~0UL):
 * what a caller needs to map states (struct vgetrandom_opaque_params).
 */
struct vdso_getrandom_params {
	uint32_t	size_of_opaque_state;
	uint32_t	mmap_prot;
	uint32_t	mmap_flags;
	uint32_t	reserved[13];
};

/*
 * One getrandom state, opaque to its caller; Linux's own layout, so that a
 * state means the same to this vDSO and the kernel's.  The key sits right
 * after the batch: one refill of two blocks writes both, and so replaces
 * the key that made them.  generation is the rng page's at the last rekey
 * (0: none yet), pos the first unused byte of batch, in_use guards against
 * a signal handler reentering with the same state.
 */
#define VDSO_CHACHA_BLOCK	64
struct vdso_getrandom_state {
	union {
		struct {
			uint8_t		batch[VDSO_CHACHA_BLOCK * 3 / 2];
			uint32_t	key[8];
		};
		uint8_t		batch_key[VDSO_CHACHA_BLOCK * 2];
	};
	uint64_t	generation __attribute__((aligned(8)));
	uint8_t		pos;
	uint8_t		in_use;
};

#ifdef VDSOGEN_CORE_H
/*
 * getrandom(): a fast-key-erasure ChaCha20 generator per state, keyed from
 * the kernel and rekeyed whenever the kernel's generation moves on (it
 * reseeded, or a fork or memory pressure zeroed the state, whose mapping
 * the caller made MAP_DROPPABLE as the query says).  Every request first
 * takes what is left of the state's batch, wiping it as it goes; whole
 * blocks go straight to the caller's buffer; then two blocks refill the
 * batch and, in the same store, replace the key, so that by the time any
 * output is returned the key that made it exists nowhere.  Whatever the
 * generator cannot answer itself goes to the syscall: flags it does not
 * know, a state of the wrong size or already in use (a signal handler),
 * a kernel generator not yet ready.
 */

/* uapi linux/random.h: the flags answered here; mman.h: how states must be mapped. */
#define VDSO_GRND_NONBLOCK	0x0001
#define VDSO_GRND_RANDOM	0x0002
#define VDSO_GRND_INSECURE	0x0004
#define VDSO_PROT_READ		0x1
#define VDSO_PROT_WRITE		0x2
#define VDSO_MAP_DROPPABLE	0x08	/* zeroed under memory pressure and in a forked child */
#define VDSO_MAP_ANONYMOUS	0x20	/* on every ABI that has getrandom here (not mips, alpha, parisc) */
#if defined(__mips__) || defined(__alpha__) || defined(__hppa__)
#error "MAP_ANONYMOUS differs on this architecture"
#endif
/* The most one read returns (MAX_RW_COUNT), as the syscall caps it. */
#define VDSO_MAX_RW_COUNT	(0x7fffffffUL & ~(unsigned long)(VDSO_PAGE_SIZE - 1))
#define VDSO_EFAULT		14

#define WRITE_ONCE(x, v)	(*(volatile __typeof__(x) *)&(x) = (v))

/*
 * The arch's ChaCha20 (its chacha fragment): @nblocks blocks of keystream
 * of @key ("expand 32-byte k", the key, the 64-bit block counter @counter,
 * a zero nonce) to @dst, @counter moved on; it stores nothing else and
 * never touches the stack.
 */
void __arch_chacha20_blocks_nostack(uint8_t *dst, const uint32_t *key, uint32_t *counter, size_t nblocks)
	__attribute__((visibility("hidden")));

static __vdso_cold long vdso_getrandom_syscall(void *buffer, size_t len, unsigned int flags)
{
	return vdso_syscall(VDSO_NR_getrandom, (long)buffer, (long)len, (long)flags);
}

/* What a caller maps each state with. */
static __always_inline long vdso_getrandom_params(struct vdso_getrandom_params *p)
{
	unsigned int i;

	p->size_of_opaque_state = sizeof(struct vdso_getrandom_state);
	p->mmap_prot = VDSO_PROT_READ | VDSO_PROT_WRITE;
	p->mmap_flags = VDSO_MAP_DROPPABLE | VDSO_MAP_ANONYMOUS;
	for (i = 0; i < sizeof(p->reserved) / sizeof(p->reserved[0]); i++)
		WRITE_ONCE(p->reserved[i], 0);
	return 0;
}

/*
 * Move @n bytes of batch to the caller, zeroing them behind: a word at a
 * time, then bytes.  The empty asm keeps the compilers from making a
 * memcpy call of the loops, which a vDSO cannot link.
 */
static __always_inline void vdso_move_wiping(uint8_t *dst, uint8_t *src, size_t n)
{
	for (; n >= sizeof(unsigned long); n -= sizeof(unsigned long)) {
		unsigned long w;

		__builtin_memcpy(&w, src, sizeof(w));
		__builtin_memcpy(dst, &w, sizeof(w));
		__builtin_memset(src, 0, sizeof(w));
		__asm__("" : "+r"(dst), "+r"(src));
		dst += sizeof(w);
		src += sizeof(w);
	}
	for (; n; n--) {
		*dst++ = *src;
		*src++ = 0;
		__asm__("" : "+r"(dst), "+r"(src));
	}
}

/* Rekey @st from the kernel for generation @gen; false when the syscall does not give a whole key. */
static __vdso_cold bool vdso_getrandom_rekey(struct vdso_getrandom_state *st, uint64_t gen)
{
	/* The generation first: a fork right after this cannot leave parent and child one key. */
	WRITE_ONCE(st->generation, gen);
	/* The key below is newer than the generation read (the kernel publishes it with a release). */
	vdso_rmb();
	if (vdso_syscall(VDSO_NR_getrandom, (long)st->key, sizeof(st->key), 0) != (long)sizeof(st->key)) {
		WRITE_ONCE(st->generation, 0);
		return false;
	}
	st->pos = sizeof(st->batch);		/* the batch is of the old key: none of it is left */
	return true;
}

#if VDSO_HAS_TIMENS && VDSO_PAGE_RNG == VDSO_PAGE_TIME
/*
 * Before v6.15 some kernels keep the rng state inside the time page (the
 * layout's rng page is the time page seen at that offset): in a time
 * namespace that slot maps the namespace's page, and the real one, rng
 * state and all, is at the time-namespace page's slot, as the clocks find
 * it.
 */
static __always_inline const vdso_rng_data_t *vdso_real_rng(const vdso_rng_data_t *rng)
{
	return (const void *)vdso_real_data((const vdso_time_data_t *)(const void *)rng);
}
#else
static __always_inline const vdso_rng_data_t *vdso_real_rng(const vdso_rng_data_t *rng)
{
	return rng;
}
#endif

static __always_inline long
vdso_getrandom(const vdso_rng_data_t *rng, void *buffer, size_t len, unsigned int flags, void *opaque_state,
	       size_t opaque_len)
{
	struct vdso_getrandom_state *st = opaque_state;
	size_t want = len < VDSO_MAX_RW_COUNT ? len : VDSO_MAX_RW_COUNT;
	uint32_t counter[2] = { 0, 0 };
	bool retried = false;
	uint8_t *out;
	size_t left, n;
	uint64_t gen;

	if (unlikely(!buffer && !len && !flags && opaque_len == ~(size_t)0))
		return vdso_getrandom_params(opaque_state);
	/* A state may not straddle pages: the kernel may drop either at any time. */
	if (unlikely(((uintptr_t)st & (VDSO_PAGE_SIZE - 1)) + sizeof(*st) > VDSO_PAGE_SIZE))
		return -VDSO_EFAULT;
	if (unlikely(flags & ~(VDSO_GRND_NONBLOCK | VDSO_GRND_RANDOM | VDSO_GRND_INSECURE)))
		goto syscall;
	rng = vdso_real_rng(rng);
	if (unlikely(opaque_len != sizeof(*st) || !READ_ONCE(rng->is_ready)))
		goto syscall;
	/* Only now: before the generator is ready, the syscall may block or fail even for 0 bytes. */
	if (unlikely(!len))
		return 0;
	if (unlikely(READ_ONCE(st->in_use)))
		goto syscall;
	WRITE_ONCE(st->in_use, 1);
again:
	gen = READ_ONCE(rng->generation);
	if (unlikely(st->generation != gen) && !vdso_getrandom_rekey(st, gen)) {
		WRITE_ONCE(st->in_use, 0);
		goto syscall;
	}
	out = buffer;
	left = want;
	for (;;) {
		n = sizeof(st->batch) - st->pos;
		n = n < left ? n : left;
		vdso_move_wiping(out, st->batch + st->pos, n);
		st->pos += n;
		out += n;
		left -= n;
		if (!left)
			break;
		n = left / VDSO_CHACHA_BLOCK;
		if (n) {
			__arch_chacha20_blocks_nostack(out, st->key, counter, n);
			out += n * VDSO_CHACHA_BLOCK;
			left -= n * VDSO_CHACHA_BLOCK;
		}
		/* A new batch, and the key replaced by the blocks' last 32 bytes. */
		__arch_chacha20_blocks_nostack(st->batch_key, st->key, counter,
					       sizeof(st->batch_key) / VDSO_CHACHA_BLOCK);
		st->pos = 0;
	}
	/*
	 * The output stands only if the generation did not move meanwhile (the
	 * kernel reseeded, or the state was zeroed: its generation reads 0,
	 * which the kernel's never is).  Once more from the start, then the
	 * syscall, so that no writer can keep this looping.
	 */
	__asm__ __volatile__("" ::: "memory");
	if (unlikely(READ_ONCE(st->generation) != READ_ONCE(rng->generation))) {
		if (!retried) {
			retried = true;
			goto again;
		}
		WRITE_ONCE(st->in_use, 0);
		goto syscall;
	}
	WRITE_ONCE(st->in_use, 0);
	return (long)want;
syscall:
	return vdso_getrandom_syscall(buffer, len, flags);
}
#endif /* VDSOGEN_CORE_H */

#endif /* VDSOGEN_GETRANDOM_H */
