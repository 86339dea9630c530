/* Freestanding harness: stdio on file descriptors (see fs.h). */
#ifndef FS_STDIO_H
#define FS_STDIO_H

#include <stdarg.h>
#include <stddef.h>

#define EOF		(-1)
#define BUFSIZ		4096
#define _IOFBF		0
#define _IOLBF		1
#define _IONBF		2

typedef struct fs_file FILE;

extern FILE *stdout, *stderr;

FILE *fopen(const char *path, const char *mode);
int fclose(FILE *f);
int fflush(FILE *f);
int setvbuf(FILE *f, char *buf, int mode, size_t size);
char *fgets(char *s, int n, FILE *f);
size_t fwrite(const void *p, size_t size, size_t n, FILE *f);
int fputc(int c, FILE *f);
int fputs(const char *s, FILE *f);
int putc(int c, FILE *f);
int putchar(int c);
int puts(const char *s);

int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int fprintf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int snprintf(char *s, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int vprintf(const char *fmt, va_list ap);
int vfprintf(FILE *f, const char *fmt, va_list ap);
int vsnprintf(char *s, size_t n, const char *fmt, va_list ap);
int sscanf(const char *s, const char *fmt, ...) __attribute__((format(scanf, 2, 3)));

#endif
