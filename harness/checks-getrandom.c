/*
 * vdsogen test harness: getrandom, with the harness as the kernel's random
 * driver.  It owns the rng page (is_ready, generation) and moves the
 * generation on as a reseed would; the getrandom syscall the image makes
 * is the real one.  A reference ChaCha20 predicts, from a snapshot of a
 * state, every byte the image must return and the state it must leave
 * (the batch wiped where it was used, the key replaced by the refill's
 * tail), so the generator is checked to the byte; the rest (rekeying, the
 * fallbacks, a racing writer, fork) is checked through what the state
 * shows.
 *
 *   getrandom.query		the opaque-state query: size, mmap prot and flags, reserved zero
 *   getrandom.map		states mapped as the query says
 *   getrandom.keystream	RFC 8439's first keystream block through the export
 *   getrandom.lengths		every length 1-300 and some to 4160: output and state as predicted
 *   getrandom.rekey		a new state, a zeroed one (dropped, or a fork's) and a new generation rekey
 *   getrandom.fallback	unknown flags, a wrong state size, a state in use, an unready generator: the
 *				syscall, the state untouched; a state across pages: -EFAULT; 0 bytes: 0
 *   getrandom.race		a writer moving the generation on while calls run: each call's key is of a
 *				generation at least as new as the one before it began
 *   getrandom.fork		a child's draws never repeat its parent's
 *   getrandom.states		two states never give the same bytes
 *   getrandom.timens		where the rng state sits inside the time page (kernels before v6.15), in a
 *				time namespace: still answered from the state, found in the real page
 */
#include "internal.h"

#ifdef H_HAS_GETRANDOM
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct vdso_getrandom_state gr_state;

#define GR_SIZE		sizeof(gr_state)
#define GR_GRND_NONBLOCK	0x0001
#define GR_UNKNOWN_FLAG		0x0008

static vdso_rng_data_t *rng_page(void)
{
	return (vdso_rng_data_t *)H_PAGE(VDSO_PAGE_RNG);
}

/*
 * The kernel's side: a new generation published with a release (a fence
 * and a plain store: 32-bit targets have no 64-bit atomics without
 * libatomic, and the kernel's own store is two words there), readiness.
 */
static void rng_publish(uint64_t generation)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*(volatile uint64_t *)&rng_page()->generation = generation;
}

static uint64_t rng_generation(void)
{
	uint64_t g = *(volatile uint64_t *)&rng_page()->generation;

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return g;
}

/* Ready or not, and a reseed (generations are never 0). */
static void rng_set(int ready, uint64_t generation)
{
	rng_publish(generation);
	__atomic_store_n(&rng_page()->is_ready, (uint8_t)ready, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------ */
/* The reference                                                       */

static uint32_t rol32(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

#define QR(a, b, c, d)	do {						\
	x[a] += x[b]; x[d] = rol32(x[d] ^ x[a], 16);			\
	x[c] += x[d]; x[b] = rol32(x[b] ^ x[c], 12);			\
	x[a] += x[b]; x[d] = rol32(x[d] ^ x[a], 8);			\
	x[c] += x[d]; x[b] = rol32(x[b] ^ x[c], 7);			\
} while (0)

/* One block of keystream: "expand 32-byte k", the key, the 64-bit counter, a zero nonce; little-endian words. */
static void ref_block(uint8_t out[64], const uint32_t key[8], uint64_t counter)
{
	uint32_t s[16] = { 0x61707865, 0x3320646e, 0x79622d32, 0x6b206574 }, x[16];
	int i;

	memcpy(&s[4], key, 32);
	s[12] = (uint32_t)counter;
	s[13] = (uint32_t)(counter >> 32);
	memcpy(x, s, sizeof(x));
	for (i = 0; i < 10; i++) {
		QR(0, 4, 8, 12); QR(1, 5, 9, 13); QR(2, 6, 10, 14); QR(3, 7, 11, 15);
		QR(0, 5, 10, 15); QR(1, 6, 11, 12); QR(2, 7, 8, 13); QR(3, 4, 9, 14);
	}
	for (i = 0; i < 16; i++) {
		uint32_t w = x[i] + s[i];

		out[4 * i] = (uint8_t)w;
		out[4 * i + 1] = (uint8_t)(w >> 8);
		out[4 * i + 2] = (uint8_t)(w >> 16);
		out[4 * i + 3] = (uint8_t)(w >> 24);
	}
}

/*
 * What a call for @len bytes must return from state @st, whose generation
 * is current, and the state it must leave: the batch from pos on, wiped;
 * then, per round, whole blocks straight out and a refill of two blocks
 * that is the new batch and key.  The block counter starts at 0 in each call.
 */
static void predict(gr_state *st, uint8_t *out, size_t len)
{
	uint64_t counter = 0;
	size_t n, i;

	for (;;) {
		n = sizeof(st->batch) - st->pos;
		n = n < len ? n : len;
		memcpy(out, st->batch + st->pos, n);
		memset(st->batch + st->pos, 0, n);
		st->pos += n;
		out += n;
		len -= n;
		if (!len)
			return;
		for (; len >= 64; len -= 64, out += 64)
			ref_block(out, st->key, counter++);
		for (i = 0; i < 2; i++)
			ref_block(st->batch_key + 64 * i, st->key, counter++);
		st->pos = 0;
	}
}

/* ------------------------------------------------------------------ */
/* States                                                              */

static struct vdso_getrandom_params gr_params;
static int gr_droppable;		/* states are mapped as the params say (else MAP_PRIVATE, wiped on fork) */
static int gr_wipes = 1;		/* a fork's copy of the states reads zero (the fallback's, not under qemu-user) */

/*
 * Whether a child's copy of @p reads zero, as the kernel makes it for a
 * MAP_DROPPABLE or MADV_WIPEONFORK mapping (qemu-user does neither).
 */
static int wiped_on_fork(unsigned char *p)
{
	int status;
	pid_t pid;

	p[0] = 1;
	pid = fork();
	if (pid == 0)
		_exit(p[0] == 0 ? 0 : 1);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 0;
	p[0] = 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* @n states of the size the query gave, mapped as it says; NULL on failure (in @k). */
static gr_state *states(struct chk *k, size_t n)
{
	size_t size = (size_t)gr_params.size_of_opaque_state * n;
	void *p;

	p = mmap(NULL, size, (int)gr_params.mmap_prot, (int)gr_params.mmap_flags, -1, 0);
	if (p == MAP_FAILED && errno == EINVAL) {
		/* A kernel (or qemu-user) without MAP_DROPPABLE: private memory that a fork wipes. */
		p = mmap(NULL, size, (int)gr_params.mmap_prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED && madvise(p, size, MADV_WIPEONFORK) != 0) {
			munmap(p, size);
			p = MAP_FAILED;
		}
	} else if (p != MAP_FAILED) {
		gr_droppable = 1;
	}
	if (p == MAP_FAILED) {
		chk_fail(k, "mmap of %zu states as the query says: %s", n, strerror(errno));
		return NULL;
	}
	/* Mapped as the query says, a fork is the kernel's business; in the fallback, see what it does. */
	gr_wipes = gr_droppable || wiped_on_fork(p);
	return p;
}

static void unmap_states(gr_state *st, size_t n)
{
	munmap(st, (size_t)gr_params.size_of_opaque_state * n);
}

static struct h_ret draw(gr_state *st, void *buf, size_t len, unsigned int flags)
{
	return v_getrandom(buf, len, flags, st, GR_SIZE);
}

/* A state of the current generation with @key and an empty batch. */
static void keyed(gr_state *st, const uint32_t key[8])
{
	memset(st, 0, GR_SIZE);
	memcpy(st->key, key, sizeof(st->key));
	st->pos = sizeof(st->batch);
	st->generation = rng_generation();
}

/* Draw @len bytes from @st and compare output and state with the prediction. */
static void expect_predicted(struct chk *k, gr_state *st, size_t len, unsigned int flags)
{
	static uint8_t got[4352], want[4352];
	gr_state before = *st, after = *st;
	struct h_ret r;
	size_t i;

	memset(got, SENTINEL, len + 1);
	predict(&after, want, len);
	r = draw(st, got, len, flags);
	if (r.raw != (long)len || r.flag) {
		chk_fail(k, "%zu bytes (pos %u): returned %s", len, before.pos, RET(r));
		return;
	}
	for (i = 0; i < len && got[i] == want[i]; i++)
		;
	if (i < len)
		chk_fail(k, "%zu bytes (pos %u): byte %zu is %#x, ChaCha20 of the state's key gives %#x", len,
			 before.pos, i, got[i], want[i]);
	else if (got[len] != SENTINEL)
		chk_fail(k, "%zu bytes: byte %zu past the end written", len, len);
	else if (memcmp(st->key, after.key, sizeof(st->key)) != 0)
		chk_fail(k, "%zu bytes (pos %u): the state's key is not the refill's last 32 bytes%s", len, before.pos,
			 memcmp(st->key, before.key, sizeof(st->key)) == 0 ? " (the old key is still there)" : "");
	else if (memcmp(st->batch, after.batch, sizeof(st->batch)) != 0)
		chk_fail(k, "%zu bytes (pos %u): the batch left is not as predicted (used bytes must be zero)", len,
			 before.pos);
	else if (st->pos != after.pos || st->in_use || st->generation != before.generation)
		chk_fail(k, "%zu bytes: pos %u in_use %u generation %llu after, want %u 0 %llu", len, st->pos,
			 st->in_use, (unsigned long long)st->generation, after.pos,
			 (unsigned long long)before.generation);
}

/* ------------------------------------------------------------------ */
/* The checks                                                          */

static void check_query(void)
{
	struct vdso_getrandom_params p;
	struct h_ret r;
	struct chk k;
	size_t i;

	chk_start(&k, "getrandom.query");
	memset(&p, SENTINEL, sizeof(p));
	r = v_getrandom(NULL, 0, 0, &p, ~(size_t)0);
	if (!h_ret_ok(r)) {
		chk_fail(&k, "getrandom(NULL, 0, 0, &params, ~0UL) returned %s, want 0", RET(r));
	} else if (p.size_of_opaque_state != GR_SIZE) {
		chk_fail(&k, "size_of_opaque_state %u, want %zu", p.size_of_opaque_state, GR_SIZE);
	} else if (p.mmap_prot != (PROT_READ | PROT_WRITE) || p.mmap_flags != (0x08 | MAP_ANONYMOUS)) {
		chk_fail(&k, "mmap_prot %#x mmap_flags %#x, want %#x and MAP_DROPPABLE | MAP_ANONYMOUS (%#x)",
			 p.mmap_prot, p.mmap_flags, PROT_READ | PROT_WRITE, 0x08 | MAP_ANONYMOUS);
	} else {
		for (i = 0; i < sizeof(p.reserved) / sizeof(p.reserved[0]); i++)
			if (p.reserved[i])
				chk_fail(&k, "reserved[%zu] is %#x, want 0", i, p.reserved[i]);
	}
	/* States are mapped as the image says, right or wrong (the fork check then shows what wrong costs). */
	gr_params = p;
	if (!h_ret_ok(r)) {
		gr_params.mmap_prot = PROT_READ | PROT_WRITE;
		gr_params.mmap_flags = 0x08 | MAP_ANONYMOUS;
	}
	gr_params.size_of_opaque_state = GR_SIZE;
	chk_end(&k);
}

/* RFC 8439, A.1 test vector #1: the all-zero key, counter 0, nonce 0. */
static const uint8_t rfc8439_a1_1[16] = {
	0x76, 0xb8, 0xe0, 0xad, 0xa0, 0xf1, 0x3d, 0x90, 0x40, 0x5d, 0x6a, 0xe5, 0x53, 0x86, 0xbd, 0x28,
};

static void check_keystream(gr_state *st)
{
	static const uint32_t zero[8];
	uint8_t ref[64], got[64];
	struct h_ret r;
	struct chk k;

	chk_start(&k, "getrandom.keystream");
	ref_block(ref, zero, 0);
	if (memcmp(ref, rfc8439_a1_1, sizeof(rfc8439_a1_1)) != 0)
		chk_fail(&k, "the harness's reference ChaCha20 does not give RFC 8439's test vector");
	keyed(st, zero);
	r = draw(st, got, 64, 0);
	if (r.raw != 64)
		chk_fail(&k, "64 bytes: returned %s", RET(r));
	else if (memcmp(got, ref, 64) != 0)
		chk_fail(&k, "64 bytes with the all-zero key: not RFC 8439's A.1 #1 keystream (first byte %#x)",
			 got[0]);
	chk_end(&k);
}

static void check_lengths(gr_state *st)
{
	static const size_t big[] = { 511, 512, 513, 1000, 4095, 4096, 4097, 4160 };
	uint32_t key[8];
	struct chk k;
	size_t len, i;

	chk_start(&k, "getrandom.lengths");
	for (i = 0; i < 8; i++)
		key[i] = 0x01020304u * (uint32_t)(i + 1);
	keyed(st, key);
	/* One state through every length: each call starts wherever the last left the batch. */
	for (len = 1; len <= 300 && !k.failures; len++)
		expect_predicted(&k, st, len, len % 3 ? 0 : GR_GRND_NONBLOCK);
	for (i = 0; i < sizeof(big) / sizeof(big[0]) && !k.failures; i++)
		expect_predicted(&k, st, big[i], 0);
	chk_end(&k);
}

static void check_rekey(gr_state *st)
{
	uint8_t buf[32];
	uint32_t key[8];
	gr_state before;
	struct h_ret r;
	struct chk k;

	chk_start(&k, "getrandom.rekey");
	/* A new state: generation 0, which the kernel's never is. */
	memset(st, 0, GR_SIZE);
	r = draw(st, buf, 16, 0);
	if (r.raw != 16 || st->generation != rng_generation() || st->pos != 16 || st->in_use)
		chk_fail(&k, "a new state: returned %s, generation %llu (page %llu), pos %u, in_use %u", RET(r),
			 (unsigned long long)st->generation, (unsigned long long)rng_generation(), st->pos,
			 st->in_use);
	/* The kernel reseeds: the next call rekeys, whatever batch the state still has. */
	memcpy(key, st->key, sizeof(key));
	before = *st;
	rng_set(1, rng_generation() + 1);
	predict(&before, buf, 16);
	r = draw(st, buf + 16, 16, 0);
	if (r.raw != 16 || st->generation != rng_generation())
		chk_fail(&k, "after a reseed: returned %s, generation %llu (page %llu)", RET(r),
			 (unsigned long long)st->generation, (unsigned long long)rng_generation());
	else if (!memcmp(buf, buf + 16, 16) || !memcmp(st->key, before.key, sizeof(key)))
		chk_fail(&k, "after a reseed: the bytes are still of the old key");
	/* A state the kernel zeroed (memory pressure drops a MAP_DROPPABLE page): rekeyed too. */
	memset(st, 0, GR_SIZE);
	r = draw(st, buf, 16, 0);
	if (r.raw != 16 || st->generation != rng_generation())
		chk_fail(&k, "a zeroed state: returned %s, generation %llu", RET(r),
			 (unsigned long long)st->generation);
	chk_end(&k);
}

/* The call went to the syscall: the state is exactly as it was. */
static void expect_syscall(struct chk *k, const char *what, gr_state *st, size_t len, unsigned int flags,
			   size_t opaque_len, long want)
{
	uint8_t buf[80];
	gr_state before = *st;
	struct h_ret r;

	memset(buf, SENTINEL, sizeof(buf));
	r = v_getrandom(buf, len, flags, st, opaque_len);
	if (want < 0 ? !h_ret_errno(r, -want) : r.raw != want || r.flag)
		chk_fail(k, "%s: returned %s, want %ld", what, RET(r), want);
	else if (memcmp(&before, st, GR_SIZE) != 0)
		chk_fail(k, "%s: the state changed, the call did not go to the syscall", what);
}

static void check_fallback(gr_state *st)
{
	static const uint32_t key[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	gr_state *edge;
	uint8_t buf[16];
	struct h_ret r;
	struct chk k;

	chk_start(&k, "getrandom.fallback");
	keyed(st, key);
	expect_syscall(&k, "an unknown flag (0x8)", st, 16, GR_UNKNOWN_FLAG, GR_SIZE, -EINVAL);
	expect_syscall(&k, "opaque_len one short", st, 16, 0, GR_SIZE - 1, 16);
	expect_syscall(&k, "0 bytes", st, 0, 0, GR_SIZE, 0);
	st->in_use = 1;
	expect_syscall(&k, "a state in use", st, 16, 0, GR_SIZE, 16);
	st->in_use = 0;
	rng_set(0, rng_generation());
	expect_syscall(&k, "the generator not ready", st, 16, 0, GR_SIZE, 16);
	expect_syscall(&k, "the generator not ready, 0 bytes", st, 0, GR_GRND_NONBLOCK, GR_SIZE, 0);
	rng_set(1, rng_generation());
	/* The last bytes of a page (of the spec's size, which the mapping spans): the state would straddle two. */
	edge = (gr_state *)((((uintptr_t)st + VDSO_PAGE_SIZE) & ~(uintptr_t)(VDSO_PAGE_SIZE - 1)) - GR_SIZE / 2);
	r = v_getrandom(buf, sizeof(buf), 0, edge, GR_SIZE);
	if (!h_ret_errno(r, EFAULT))
		chk_fail(&k, "a state across a page boundary: returned %s, want -EFAULT", RET(r));
	expect_predicted(&k, st, 16, 0);
	chk_end(&k);
}

/* The racing writer: a reseed after another, as fast as it can. */
static int gr_stop;

static void *reseeder(void *arg)
{
	unsigned long n = 0;

	(void)arg;
	pin_to(h_other_cpu);
	while (!__atomic_load_n(&gr_stop, __ATOMIC_ACQUIRE)) {
		rng_publish(rng_generation() + 1);
		spin((unsigned int)(n++ % 64));
	}
	return NULL;
}

static void check_race(gr_state *st)
{
	const int64_t window = h_soak ? (int64_t)h_soak * NSEC_PER_SEC : 100000000;
	uint8_t buf[2][200];
	struct hts t0, t;
	unsigned long calls = 0;
	pthread_t th;
	struct chk k;
	int e;

	chk_start(&k, "getrandom.race");
	memset(st, 0, GR_SIZE);
	gr_stop = 0;
	e = pthread_create(&th, NULL, reseeder, NULL);
	if (e) {
		chk_fail(&k, "pthread_create: %s", strerror(e));
		chk_end(&k);
		return;
	}
	sys_gettime(C_MONOTONIC, &t0);
	do {
		size_t len = 1 + calls % 199;
		uint64_t g0 = rng_generation();
		struct h_ret r = draw(st, buf[calls & 1], len, 0);

		if (r.raw != (long)len)
			chk_fail(&k, "call %lu (%zu bytes): returned %s", calls, len, RET(r));
		else if (st->in_use)
			chk_fail(&k, "call %lu: in_use left set", calls);
		else if (st->generation < g0)
			chk_fail(&k, "call %lu: keyed for generation %llu, the page said %llu before it began", calls,
				 (unsigned long long)st->generation, (unsigned long long)g0);
		else if (calls && len > 8 && !memcmp(buf[0], buf[1], 8))
			chk_fail(&k, "call %lu: the same bytes as the call before", calls);
		calls++;
		sys_gettime(C_MONOTONIC, &t);
	} while (elapsed_ns(t0, t) < window && k.failures < 1);
	__atomic_store_n(&gr_stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	printf("# getrandom.race: %lu calls, the generation at %llu\n", calls, (unsigned long long)rng_generation());
	chk_end(&k);
}

static void check_fork(gr_state *st)
{
	uint8_t mine[64], theirs[64];
	int pipefd[2], status;
	struct h_ret r;
	struct chk k;
	pid_t pid;

	chk_start(&k, "getrandom.fork");
	memset(st, 0, GR_SIZE);
	draw(st, mine, 16, 0);		/* keyed, a batch under way */
	if (pipe(pipefd) != 0) {
		chk_fail(&k, "pipe: %s", strerror(errno));
		chk_end(&k);
		return;
	}
	pid = fork();
	if (pid == 0) {
		/*
		 * The child: its copy of the state is wiped (MAP_DROPPABLE, or
		 * MADV_WIPEONFORK); where the platform does not (qemu-user), the
		 * harness does what the kernel would.
		 */
		if (!gr_wipes)
			memset(st, 0, GR_SIZE);
		r = draw(st, theirs, sizeof(theirs), 0);
		if (r.raw != (long)sizeof(theirs))
			memset(theirs, 0, sizeof(theirs));
		_exit(write(pipefd[1], theirs, sizeof(theirs)) == (ssize_t)sizeof(theirs) ? 0 : 1);
	}
	close(pipefd[1]);
	if (pid < 0) {
		chk_fail(&k, "fork: %s", strerror(errno));
	} else {
		r = draw(st, mine, sizeof(mine), 0);
		if (read(pipefd[0], theirs, sizeof(theirs)) != (ssize_t)sizeof(theirs) ||
		    waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			chk_fail(&k, "the child did not answer");
		else if (r.raw != (long)sizeof(mine))
			chk_fail(&k, "the parent's call returned %s", RET(r));
		else if (!memcmp(mine, theirs, 16))
			chk_fail(&k, "the child drew the parent's bytes: its state was not rekeyed");
	}
	close(pipefd[0]);
	chk_end(&k);
}

static void check_states(gr_state *a, gr_state *b)
{
	uint8_t x[64], y[64];
	struct chk k;
	int i;

	chk_start(&k, "getrandom.states");
	memset(a, 0, GR_SIZE);
	memset(b, 0, GR_SIZE);
	for (i = 0; i < 64 && !k.failures; i++) {
		draw(a, x, (size_t)1 + i, 0);
		draw(b, y, (size_t)1 + i, 0);
		if (i >= 7 && !memcmp(x, y, (size_t)1 + i))
			chk_fail(&k, "two states gave the same %d bytes", i + 1);
		else if (!memcmp(a->key, b->key, sizeof(a->key)))
			chk_fail(&k, "two states hold the same key");
	}
	chk_end(&k);
}

#if VDSO_HAS_TIMENS && VDSO_PAGE_RNG == VDSO_PAGE_TIME
/*
 * A time namespace, as such a kernel maps it: the time page's slot holds the
 * namespace's page, zero but for its clock records (clock_mode TIMENS), and
 * the real page, rng state and all, sits at the time-namespace page's slot.
 * A vDSO reading the slot's rng state would find the generator not ready
 * and make the syscall: the state would not move on as predicted.
 */
static void check_timens(gr_state *st)
{
	static const uint32_t key[8] = { 8, 7, 6, 5, 4, 3, 2, 1 };
	static unsigned char saved[2][VDSO_PAGE_SIZE];
	unsigned char *slot = H_PAGE(VDSO_PAGE_TIME), *real = H_PAGE(VDSO_PAGE_TIMENS);
	vdso_clock_t *vc = VDSO_CLOCKS((vdso_time_data_t *)slot);
	struct chk k;

	chk_start(&k, "getrandom.timens");
	keyed(st, key);
	memcpy(saved[0], slot, VDSO_PAGE_SIZE);
	memcpy(saved[1], real, VDSO_PAGE_SIZE);
	memcpy(real, slot, VDSO_PAGE_SIZE);
	memset(slot, 0, VDSO_PAGE_SIZE);
	vc[0].seq = vc[1].seq = 1;
	vc[0].clock_mode = vc[1].clock_mode = CLOCKMODE_TIMENS;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	expect_predicted(&k, st, 16, 0);
	memcpy(slot, saved[0], VDSO_PAGE_SIZE);
	memcpy(real, saved[1], VDSO_PAGE_SIZE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	chk_end(&k);
}
#endif

void check_getrandom(void)
{
	gr_state *st;
	struct chk k;

	check_query();
	rng_set(1, 1);
	/* Two pages of states: the checks use the first of each page, the edge check the end of the first. */
	chk_start(&k, "getrandom.map");
	st = states(&k, 2 * VDSO_PAGE_SIZE / GR_SIZE + 1);
	chk_end(&k);
	if (!st)
		return;
	printf("# getrandom: states mapped %s%s\n", gr_droppable ? "as the query says (MAP_DROPPABLE)"
								  : "MAP_PRIVATE with MADV_WIPEONFORK (no MAP_DROPPABLE here)",
	       gr_wipes ? "" : "; a fork does not wipe them here (qemu-user): the harness wipes the child's, as the kernel does");
	check_keystream(st);
	check_lengths(st);
	check_rekey(st);
	check_fallback(st);
	check_race(st);
	check_fork(st);
	check_states(st, (gr_state *)((unsigned char *)st + VDSO_PAGE_SIZE));
#if VDSO_HAS_TIMENS && VDSO_PAGE_RNG == VDSO_PAGE_TIME
	check_timens(st);
#endif
	unmap_states(st, 2 * VDSO_PAGE_SIZE / GR_SIZE + 1);
	rng_set(1, 1);
}
#endif /* H_HAS_GETRANDOM */
