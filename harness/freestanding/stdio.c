/*
 * Freestanding harness: stdio on file descriptors, and the printf and
 * scanf conversions the harness uses (see fs.h).  Floating point prints
 * in fixed notation only (%f with a precision).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fs_file {
	int		fd;
	int		mode;		/* _IOFBF, _IOLBF, _IONBF */
	int		eof;
	size_t		len, pos;	/* bytes in buf; read position */
	char		buf[BUFSIZ];
};

static struct fs_file f_stdout = { .fd = 1, .mode = _IOLBF };
static struct fs_file f_stderr = { .fd = 2, .mode = _IONBF };
FILE *stdout = &f_stdout, *stderr = &f_stderr;

/* Files fopen() opened: few at a time in the harness. */
static struct fs_file files[4];
static int files_used[4];

static int write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return EOF;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int fflush(FILE *f)
{
	int r;

	if (!f)
		return fflush(stdout) | fflush(stderr);
	r = write_all(f->fd, f->buf, f->len);
	f->len = 0;
	return r;
}

int setvbuf(FILE *f, char *buf, int mode, size_t size)
{
	(void)buf;
	(void)size;
	fflush(f);
	f->mode = mode;
	return 0;
}

size_t fwrite(const void *p, size_t size, size_t n, FILE *f)
{
	const char *s = p;
	size_t total = size * n, i;

	if (f->mode == _IONBF)
		return fflush(f) || write_all(f->fd, s, total) ? 0 : n;
	for (i = 0; i < total; i++) {
		f->buf[f->len++] = s[i];
		if (f->len == sizeof(f->buf) || (f->mode == _IOLBF && s[i] == '\n'))
			if (fflush(f))
				return i / size;
	}
	return n;
}

int fputc(int c, FILE *f)
{
	char ch = (char)c;

	return fwrite(&ch, 1, 1, f) == 1 ? (unsigned char)c : EOF;
}

int putc(int c, FILE *f)
{
	return fputc(c, f);
}

int putchar(int c)
{
	return fputc(c, stdout);
}

int fputs(const char *s, FILE *f)
{
	size_t n = strlen(s);

	return fwrite(s, 1, n, f) == n ? 0 : EOF;
}

int puts(const char *s)
{
	return fputs(s, stdout) == EOF ? EOF : putchar('\n');
}

FILE *fopen(const char *path, const char *mode)
{
	int flags = mode[0] == 'r' ? O_RDONLY : mode[0] == 'a' ? O_WRONLY | O_CREAT | O_APPEND :
		    O_WRONLY | O_CREAT | O_TRUNC;
	size_t i;
	int fd;

	for (i = 0; i < sizeof(files) / sizeof(files[0]) && files_used[i]; i++)
		;
	if (i == sizeof(files) / sizeof(files[0])) {
		errno = EMFILE;
		return NULL;
	}
	fd = open(path, flags | O_CLOEXEC, 0644);
	if (fd < 0)
		return NULL;
	memset(&files[i], 0, sizeof(files[i]));
	files[i].fd = fd;
	files[i].mode = _IOFBF;
	files_used[i] = 1;
	return &files[i];
}

int fclose(FILE *f)
{
	int r = fflush(f);

	if (close(f->fd) != 0)
		r = EOF;
	files_used[f - files] = 0;
	return r;
}

/* A file opened for reading keeps unread bytes in buf[pos, len). */
char *fgets(char *s, int n, FILE *f)
{
	ssize_t got;
	int i = 0;

	while (i < n - 1) {
		if (f->pos == f->len) {
			if (f->eof)
				break;
			got = read(f->fd, f->buf, sizeof(f->buf));
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				f->eof = 1;
				break;
			}
			f->pos = 0;
			f->len = (size_t)got;
		}
		s[i] = f->buf[f->pos++];
		if (s[i++] == '\n')
			break;
	}
	if (i == 0)
		return NULL;
	s[i] = 0;
	return s;
}

/* ------------------------------------------------------------------ */
/* printf                                                              */

/* Where formatted output goes: a FILE, or a buffer of size n. */
struct sink {
	FILE	*f;
	char	*s;
	size_t	n;
	size_t	count;		/* bytes produced so far */
};

static void out(struct sink *k, const char *p, size_t n)
{
	size_t i;

	if (k->f)
		fwrite(p, 1, n, k->f);
	else
		for (i = 0; i < n; i++)
			if (k->count + i + 1 < k->n)
				k->s[k->count + i] = p[i];
	k->count += n;
}

static void pad(struct sink *k, char c, int n)
{
	while (n-- > 0)
		out(k, &c, 1);
}

enum { F_MINUS = 1, F_PLUS = 2, F_SPACE = 4, F_HASH = 8, F_ZERO = 16 };

/* One field: sign or prefix, zero padding to the precision, the digits, width padding. */
static void field(struct sink *k, const char *prefix, const char *digits, size_t nd, int flags,
		  int width, int prec)
{
	size_t np = strlen(prefix);
	int zeros = prec > (int)nd ? prec - (int)nd : 0;
	int len = (int)(np + nd) + zeros;

	if (prec < 0 && (flags & F_ZERO) && !(flags & F_MINUS) && width > len) {
		zeros = width - len;
		len = width;
	}
	if (!(flags & F_MINUS))
		pad(k, ' ', width - len);
	out(k, prefix, np);
	pad(k, '0', zeros);
	out(k, digits, nd);
	if (flags & F_MINUS)
		pad(k, ' ', width - len);
}

static size_t utoa(char *end, unsigned long long v, unsigned int base, int upper)
{
	const char *d = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char *p = end;

	do
		*--p = d[v % base];
	while (v /= base);
	return (size_t)(end - p);
}

static void fmt_int(struct sink *k, char conv, unsigned long long v, int neg, int flags, int width, int prec)
{
	char buf[24], *end = buf + sizeof(buf);
	const char *prefix = neg ? "-" : (flags & F_PLUS) ? "+" : (flags & F_SPACE) ? " " : "";
	unsigned int base = conv == 'o' ? 8 : (conv == 'x' || conv == 'X' || conv == 'p') ? 16 : 10;
	size_t n = 0;

	if (!(v == 0 && prec == 0))
		n = utoa(end, v, base, conv == 'X');
	if ((flags & F_HASH) && v != 0 && base == 16)
		prefix = conv == 'X' ? "0X" : "0x";
	if ((flags & F_HASH) && base == 8 && (n == 0 || end[-(long)n] != '0'))
		prefix = "0";
	field(k, prefix, end - n, n, flags, width, prec);
}

/* Fixed notation, rounded to prec digits; no exponents. */
static void fmt_fixed(struct sink *k, double v, int flags, int width, int prec)
{
	char buf[64];
	unsigned long long ip, fp = 0, scale = 1;
	size_t n = 0, i;
	int neg = v < 0, p;

	if (prec < 0)
		prec = 6;
	if (prec > 9)
		prec = 9;
	if (neg)
		v = -v;
	for (p = 0; p < prec; p++)
		scale *= 10;
	if (v >= 1.8e19) {
		field(k, neg ? "-" : "", "inf", 3, flags & ~F_ZERO, width, -1);
		return;
	}
	ip = (unsigned long long)v;
	fp = (unsigned long long)((v - (double)ip) * (double)scale + 0.5);
	if (fp >= scale) {
		ip++;
		fp -= scale;
	}
	n = utoa(buf + 24, ip, 10, 0);
	memmove(buf, buf + 24 - n, n);
	if (prec > 0) {
		buf[n++] = '.';
		for (i = 0; i < (size_t)prec; i++)
			buf[n + (size_t)prec - 1 - i] = (char)('0' + fp % 10), fp /= 10;
		n += (size_t)prec;
	}
	field(k, neg ? "-" : (flags & F_PLUS) ? "+" : "", buf, n, flags, width, -1);
}

static int format(struct sink *k, const char *fmt, va_list ap)
{
	const char *p, *s;
	int flags, width, prec, lng;
	long long sv;
	unsigned long long uv;
	size_t n;
	char c;

	for (p = fmt; *p; p++) {
		if (*p != '%') {
			out(k, p, 1);
			continue;
		}
		flags = 0;
		for (p++;; p++) {
			if (*p == '-') flags |= F_MINUS;
			else if (*p == '+') flags |= F_PLUS;
			else if (*p == ' ') flags |= F_SPACE;
			else if (*p == '#') flags |= F_HASH;
			else if (*p == '0') flags |= F_ZERO;
			else break;
		}
		width = 0;
		if (*p == '*') {
			width = va_arg(ap, int);
			if (width < 0) {
				flags |= F_MINUS;
				width = -width;
			}
			p++;
		}
		for (; *p >= '0' && *p <= '9'; p++)
			width = width * 10 + (*p - '0');
		prec = -1;
		if (*p == '.') {
			prec = 0;
			if (*++p == '*') {
				prec = va_arg(ap, int);
				p++;
			}
			for (; *p >= '0' && *p <= '9'; p++)
				prec = prec * 10 + (*p - '0');
		}
		lng = 0;
		for (;; p++) {
			if (*p == 'l') lng++;
			else if (*p == 'z' || *p == 't') lng = sizeof(size_t) == sizeof(long long) ? 2 : 1;
			else if (*p == 'j') lng = 2;
			else if (*p == 'h') ;
			else break;
		}
		switch (*p) {
		case 'd': case 'i':
			sv = lng >= 2 ? va_arg(ap, long long) : lng ? va_arg(ap, long) : va_arg(ap, int);
			fmt_int(k, 'd', sv < 0 ? -(unsigned long long)sv : (unsigned long long)sv, sv < 0, flags,
				width, prec);
			break;
		case 'u': case 'x': case 'X': case 'o':
			uv = lng >= 2 ? va_arg(ap, unsigned long long) : lng ? va_arg(ap, unsigned long) :
			     va_arg(ap, unsigned int);
			fmt_int(k, *p, uv, 0, flags, width, prec);
			break;
		case 'p':
			uv = (uintptr_t)va_arg(ap, void *);
			fmt_int(k, 'p', uv, 0, flags | F_HASH, width, prec);
			break;
		case 'c':
			c = (char)va_arg(ap, int);
			field(k, "", &c, 1, flags & ~F_ZERO, width, -1);
			break;
		case 's':
			s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			for (n = 0; s[n] && (prec < 0 || n < (size_t)prec); n++)
				;
			field(k, "", s, n, flags & ~F_ZERO, width, -1);
			break;
		case 'f': case 'F': case 'g': case 'e':
			fmt_fixed(k, va_arg(ap, double), flags, width, prec);
			break;
		case '%':
			out(k, "%", 1);
			break;
		default:
			/* Not a conversion this printf knows: shown as it is. */
			out(k, "%", 1);
			if (!*p)
				return (int)k->count;
			out(k, p, 1);
		}
	}
	return (int)k->count;
}

int vfprintf(FILE *f, const char *fmt, va_list ap)
{
	struct sink k = { .f = f };

	return format(&k, fmt, ap);
}

int vprintf(const char *fmt, va_list ap)
{
	return vfprintf(stdout, fmt, ap);
}

int vsnprintf(char *s, size_t n, const char *fmt, va_list ap)
{
	struct sink k = { .s = s, .n = n };
	int r = format(&k, fmt, ap);

	if (n)
		s[k.count < n ? k.count : n - 1] = 0;
	return r;
}

int printf(const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vfprintf(stdout, fmt, ap);
	va_end(ap);
	return r;
}

int fprintf(FILE *f, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vfprintf(f, fmt, ap);
	va_end(ap);
	return r;
}

int snprintf(char *s, size_t n, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(s, n, fmt, ap);
	va_end(ap);
	return r;
}

/* ------------------------------------------------------------------ */
/* sscanf: %d %u %x (with l, ll), %s with a width, %*s to skip         */

int sscanf(const char *s, const char *fmt, ...)
{
	const char *p;
	char *end, *dst;
	int assigned = 0, skip, width, lng;
	unsigned long long v;
	va_list ap;

	va_start(ap, fmt);
	for (p = fmt; *p; p++) {
		if (*p == ' ') {
			while (*s == ' ' || *s == '\t' || *s == '\n')
				s++;
			continue;
		}
		if (*p != '%') {
			if (*s++ != *p)
				break;
			continue;
		}
		skip = *++p == '*';
		p += skip;
		for (width = 0; *p >= '0' && *p <= '9'; p++)
			width = width * 10 + (*p - '0');
		for (lng = 0; *p == 'l'; p++)
			lng++;
		if (*p == 's') {
			while (*s == ' ' || *s == '\t' || *s == '\n')
				s++;
			if (!*s)
				break;
			dst = skip ? NULL : va_arg(ap, char *);
			for (; *s && *s != ' ' && *s != '\t' && *s != '\n' && (!width || width--); s++)
				if (dst)
					*dst++ = *s;
			if (dst) {
				*dst = 0;
				assigned++;
			}
			continue;
		}
		if (*p != 'd' && *p != 'u' && *p != 'x')
			break;
		v = strtoul(s, &end, *p == 'x' ? 16 : 10);
		if (end == s)
			break;
		s = end;
		if (skip)
			continue;
		if (lng >= 2)
			*va_arg(ap, unsigned long long *) = v;
		else if (lng)
			*va_arg(ap, unsigned long *) = (unsigned long)v;
		else
			*va_arg(ap, unsigned int *) = (unsigned int)v;
		assigned++;
	}
	va_end(ap);
	return assigned;
}
